"""setup.py of the volta.serving test-lab stand-in vLLM sdist (written for the lab, not vLLM's).

It checks what a source build of vLLM is given the way the real build reacts to it, and builds
stand-in extensions (real ELF, no GPU code) shaped like the real ones. Recorded from the real
vllm 0.19.1 and 0.21.0 sdists (setup.py, vllm/envs.py, CMakeLists.txt, cmake/utils.cmake), facts in
``_volta_lab_build/release.json``; what is real and what is not: tests/lab/pypi/README.md.

Real behaviour reproduced:
- ``import torch`` at the top (no torch -> ModuleNotFoundError; with build isolation the build's
  torch is the index's ``torch==<pin>``, a CUDA 13 build in the lab, which then fails the CUDA check);
- CUDA_HOME found like ``torch.utils.cpp_extension`` (``CUDA_HOME``/``CUDA_PATH``, ``nvcc`` on PATH,
  ``/usr/local/cuda``); none -> "AssertionError: CUDA_HOME is not set"; ``$CUDA_HOME/bin/nvcc -V``;
- the version: ``<release>+cu<nvcc XY>`` unless nvcc's CUDA is the release's main CUDA version
  (``VLLM_MAIN_CUDA_VERSION``: 0.19.1 "12.9", 0.21.0 "13.0"), ``VLLM_VERSION_OVERRIDE``;
- ``MAX_JOBS`` (int(), else ValueError) and ``NVCC_THREADS`` (jobs // threads);
- ``TORCH_CUDA_ARCH_LIST`` filtered by the release's ``CUDA_SUPPORTED_ARCHS`` for that nvcc
  (cuda_archs_loose_intersection); an arch nvcc does not know -> "nvcc fatal : Unsupported gpu
  architecture 'compute_70'"; torch other than the pin -> CMake's warning only (the real build goes on;
  the extension then fails at import with "undefined symbol", as here).
Lab-only rules (say so when they fire): TORCH_CUDA_ARCH_LIST must be set; VLLM_TARGET_DEVICE must be
cuda; MAX_JOBS >= 1; torch's CUDA major must equal nvcc's (assumed, like torch.utils.cpp_extension).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import torch
from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "_volta_lab_build"))
import fatbin  # noqa: E402
import stubs  # noqa: E402

with open(os.path.join(ROOT, "_volta_lab_build", "release.json"), encoding="utf-8") as _fh:
    RELEASE = json.load(_fh)
LAB = "volta-lab stand-in vLLM build:"


def lab_fail(message):
    """A lab-only refusal (the real build has no such check): one line naming it, exit 1."""
    print(f"{LAB} error: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def target_device():
    device = os.getenv("VLLM_TARGET_DEVICE", "cuda").lower()
    if device != "cuda":
        lab_fail(f"VLLM_TARGET_DEVICE={device}: this stand-in builds only the CUDA target "
                 "(set VLLM_TARGET_DEVICE=cuda or leave it unset)")
    if torch.version.cuda is None:
        raise RuntimeError("Unknown runtime environment")
    return device


def find_cuda_home():
    """torch.utils.cpp_extension's search: CUDA_HOME/CUDA_PATH, nvcc on PATH, /usr/local/cuda."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home is None:
        nvcc = shutil.which("nvcc")
        if nvcc:
            home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        elif os.path.exists("/usr/local/cuda"):
            home = "/usr/local/cuda"
    return home


CUDA_HOME = find_cuda_home()


def nvcc_version():
    assert CUDA_HOME is not None, "CUDA_HOME is not set"
    out = subprocess.check_output([CUDA_HOME + "/bin/nvcc", "-V"], universal_newlines=True).split()
    return out[out.index("release") + 1].split(",")[0]


def vllm_version():
    override = os.getenv("VLLM_VERSION_OVERRIDE")
    if override:
        print(f"Overriding VLLM version with {override} from VLLM_VERSION_OVERRIDE")
        return override
    version = RELEASE["version"]
    cuda = nvcc_version()
    main_cuda = os.getenv("VLLM_MAIN_CUDA_VERSION", "").lower() or RELEASE["main_cuda_version"]
    if cuda != main_cuda and "sdist" not in sys.argv:
        version += "+cu" + cuda.replace(".", "")[:3]
    return version


def requirements():
    """Requirements from requirements/cuda.txt (after use_existing_torch.py, without torch)."""
    def read(name):
        out = []
        with open(os.path.join(ROOT, "requirements", name), encoding="utf-8") as fh:
            for line in fh.read().strip().split("\n"):
                if line.startswith("-r "):
                    out += read(line.split()[1])
                elif line.strip() and not line.startswith(("--", "#")):
                    out.append(line)
        return out
    return read("cuda.txt")


def compute_jobs():
    """MAX_JOBS / NVCC_THREADS like vLLM's compute_num_jobs (int() of the text)."""
    jobs = os.getenv("MAX_JOBS")
    if jobs is not None:
        jobs = int(jobs)
        print(f"INFO:setup.py:Using MAX_JOBS={jobs} as the number of jobs.", flush=True)
        if jobs < 1:
            lab_fail(f"MAX_JOBS={jobs}: the number of parallel jobs must be at least 1 "
                     "(the real build would hand ninja a job pool of {jobs})".format(jobs=jobs))
    else:
        jobs = len(os.sched_getaffinity(0))
    threads = os.getenv("NVCC_THREADS")
    threads = int(threads) if threads is not None else 1
    if os.getenv("NVCC_THREADS") is not None:
        print(f"INFO:setup.py:Using NVCC_THREADS={threads} as the number of nvcc threads.", flush=True)
    return max(1, jobs // threads), threads


ARCH_RE = re.compile(r"^(\d+)\.(\d+)(\+PTX)?$")


def requested_archs():
    """TORCH_CUDA_ARCH_LIST ("7.0", "7.0+PTX", "7.0;7.5", "7.0 7.5") -> [(sm, ptx)]."""
    text = os.getenv("TORCH_CUDA_ARCH_LIST")
    if not text or not text.strip():
        lab_fail("TORCH_CUDA_ARCH_LIST is not set: the real build would compile for every architecture "
                 "torch's CMake picks (hours); set it to the GPUs' compute capability, e.g. "
                 "TORCH_CUDA_ARCH_LIST=7.0 for a V100")
    out = []
    for item in re.split(r"[;\s]+", text.strip()):
        match = ARCH_RE.match(item)
        if not match:
            raise ValueError(f"Unknown CUDA arch ({item}) or GPU not supported")
        out.append((int(match.group(1)) * 10 + int(match.group(2)), bool(match.group(3))))
    return out


def check_nvcc_archs(archs):
    """nvcc refuses an architecture it does not know (CUDA 13: compute_70)."""
    known = subprocess.check_output([CUDA_HOME + "/bin/nvcc", "--list-gpu-arch"], universal_newlines=True).split()
    for sm, _ptx in archs:
        if f"compute_{sm}" not in known:
            print(f"nvcc fatal   : Unsupported gpu architecture 'compute_{sm}'", file=sys.stderr)
            print("CMake Error at /usr/share/cmake/Modules/CMakeTestCUDACompiler.cmake:59 (message):\n"
                  f"  The CUDA compiler\n\n    \"{CUDA_HOME}/bin/nvcc\"\n\n"
                  "  is not able to compile a simple test program.", file=sys.stderr, flush=True)
            sys.exit(1)


def supported_archs(cuda):
    """The release's CUDA_SUPPORTED_ARCHS for this nvcc (recorded from its CMakeLists.txt)."""
    major, minor = (int(p) for p in cuda.split(".")[:2])
    for rule in RELEASE["cuda_supported_archs"]:
        if (major, minor) >= tuple(rule["nvcc_at_least"]):
            return rule["archs"]
    return RELEASE["cuda_supported_archs"][-1]["archs"]


def intersect(archs, supported):
    """cuda_archs_loose_intersection: for each requested arch, the highest supported one <= it, same major."""
    out = []
    for sm, ptx in archs:
        best = [s for s in supported if s <= sm and s // 10 == sm // 10]
        if best and (max(best), ptx) not in out:
            out.append((max(best), ptx))
    return sorted(out)


def arch_text(archs):
    return ";".join(f"{sm // 10}.{sm % 10}" + ("+PTX" if ptx else "") for sm, ptx in archs)


def check_torch(cuda):
    torch_cuda = torch.version.cuda
    if torch_cuda.split(".")[0] != cuda.split(".")[0]:
        lab_fail(f"The detected CUDA version ({cuda}) mismatches the version that was used to compile "
                 f"PyTorch ({torch_cuda}). Please make sure to use the same CUDA versions. (torch "
                 f"{torch.__version__} from {os.path.dirname(torch.__file__)}; a build with build isolation "
                 "gets the index's torch, not the one installed in the venv: pass --no-build-isolation)")
    if torch.__version__.split("+")[0] != RELEASE["torch"]:
        print(f"CMake Warning at CMakeLists.txt:133 (message):\n  Pytorch version {RELEASE['torch']} expected "
              f"for CUDA build, saw {torch.__version__.split('+')[0]} instead.\n", file=sys.stderr, flush=True)


class StandInBuildExt(build_ext):
    """Checks the inputs like the CMake configure step, prints ninja-like progress, compiles stubs."""

    def run(self):
        record = self.configure()
        self.progress(record)
        self.generate(record)
        super().run()
        self.write_record(record)

    def configure(self):
        cuda = nvcc_version()
        print(f"-- Build type: {os.getenv('CMAKE_BUILD_TYPE') or 'RelWithDebInfo'}\n-- Target device: cuda",
              flush=True)
        check_torch(cuda)
        jobs, threads = compute_jobs()
        archs = requested_archs()
        check_nvcc_archs(archs)
        print(f"-- Found CUDA: {CUDA_HOME} (found version \"{cuda}\")\n"
              f"-- Found Torch: {os.path.dirname(torch.__file__)} ({torch.__version__})", flush=True)
        built = intersect(archs, supported_archs(cuda))
        print(f"-- CUDA target architectures: {arch_text(archs)}\n"
              f"-- CUDA supported target architectures: {arch_text(built)}", flush=True)
        launcher = "ccache" if shutil.which("ccache") else None
        if launcher:
            print("-- CMAKE_CUDA_COMPILER_LAUNCHER=ccache", flush=True)
        env = {k: os.environ.get(k) for k in ("CUDA_HOME", "TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "NVCC_THREADS",
                                               "VLLM_TARGET_DEVICE", "CMAKE_BUILD_TYPE", "VLLM_MAIN_CUDA_VERSION",
                                               "VLLM_VERSION_OVERRIDE")}
        return {"stand_in": "volta.serving test-lab stand-in vLLM source build", "release": RELEASE["version"],
                "version": self.distribution.get_version(), "env": env, "cuda_home": CUDA_HOME,
                "nvcc_cuda": cuda, "torch": {"version": torch.__version__, "cuda": torch.version.cuda,
                                             "path": os.path.dirname(torch.__file__),
                                             "matches_pin": torch.__version__.split("+")[0] == RELEASE["torch"]},
                "python": sys.executable, "jobs": jobs, "nvcc_threads": threads, "launcher": launcher,
                "requested_archs": arch_text(archs), "built_archs": arch_text(built),
                "fatbin": fatbin_shape(built)}

    def progress(self, record):
        units = RELEASE["progress_units"]
        total = float(os.getenv("VOLTA_LAB_BUILD_SECONDS", "3"))
        print(f"-- Configuring done\n-- Generating done\n-- Build files have been written to: {self.build_temp}\n"
              f"ninja -j {record['jobs']}", flush=True)
        for i, unit in enumerate(units, 1):
            kind = "CUDA" if unit.endswith(".cu") else "CXX"
            print(f"[{i}/{len(units)}] Building {kind} object {unit}.o", flush=True)
            time.sleep(max(0.0, total) / len(units))

    def generate(self, record):
        major = record["nvcc_cuda"].split(".")[0]
        torch_lib = os.path.join(record["torch"]["path"], "lib")
        lib64 = os.path.join(CUDA_HOME, "lib64")
        blob = fatbin.section([(record["fatbin"]["sass"], record["fatbin"]["ptx"])])
        os.makedirs(self.build_temp, exist_ok=True)
        for ext in self.extensions:
            name = ext.name.split(".")[-1]
            spec = RELEASE["extensions"][name]
            libs = ["-l:libtorch.so", "-lcudart", "-l:libc10.so"] if spec["cudart"] else ["-l:libtorch.so",
                                                                                          "-l:libc10.so"]
            info = {"module": ext.name, "built_from": "stand-in sdist", "cuda": record["nvcc_cuda"],
                    "archs": record["built_archs"]}
            source = stubs.extension_source(name, info, fatbin.c_source(blob) if spec["fatbin"] else "",
                                            calls=["cudaRuntimeGetVersion"] if spec["cudart"] else (),
                                            data_refs=[stubs.torch_abi_symbol(RELEASE["torch"])])
            path = os.path.join(self.build_temp, f"{name}_volta_lab.c")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(source)
            ext.sources = [path]
            ext.extra_link_args = ["-Wl,--no-as-needed", f"-L{lib64}", f"-L{torch_lib}", *libs]
        print(f"-- linking against {lib64} (libcudart.so -> libcudart.so.{major})", flush=True)

    def write_record(self, record):
        out = os.path.join(self.build_lib, "vllm", "_volta_lab")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "source_build.json"), "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=1, sort_keys=True)
        build_json = os.path.join(out, "build.json")
        with open(build_json, encoding="utf-8") as fh:
            build = json.load(fh)
        build["version"] = record["version"]
        build["source_build"] = True
        with open(build_json, "w", encoding="utf-8") as fh:
            json.dump(build, fh, indent=0, sort_keys=True)


def fatbin_shape(built):
    """SASS per built arch, PTX for the +PTX ones; nothing left -> CMake's default (52, inferred)."""
    if not built:
        return {"sass": [52], "ptx": [52], "note": "no requested arch is supported by this release with this "
                "nvcc: CMake's default CUDA architecture (52) is used (inferred from cmake/utils.cmake)"}
    return {"sass": sorted(sm for sm, _ in built), "ptx": sorted(sm for sm, ptx in built if ptx)}


target_device()
setup(
    name="vllm",
    version=vllm_version(),
    packages=find_packages(include=["vllm", "vllm.*"]),
    package_data={"": ["*.json"]},
    ext_modules=[Extension(f"vllm.{name}", sources=[], py_limited_api=True) for name in RELEASE["extensions"]],
    install_requires=requirements(),
    python_requires=RELEASE["requires_python"],
    entry_points={"console_scripts": ["vllm = vllm.entrypoints.cli.main:main"]},
    cmdclass={"build_ext": StandInBuildExt},
)
