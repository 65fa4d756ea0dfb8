# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA driver's package names per distribution: what to install, hold, pin and blacklist.

Two namings exist, recorded from the real archives (2026-11-30):

* **Ubuntu** (the Ubuntu archive, restricted component, source ``nvidia-graphics-drivers-<b>-server``;
  NVIDIA's CUDA repository for Ubuntu is used with the same names here): ``nvidia-driver-<b>-server``
  (full: GL, X driver ``xserver-xorg-video-nvidia-<b>-server``, DKMS), ``nvidia-headless-<b>-server``
  (= ``nvidia-headless-no-dkms-<b>-server`` + ``nvidia-dkms-<b>-server``), ``nvidia-utils-<b>-server``
  (``nvidia-smi``); ``-open`` variants. Canonical's precompiled, signed modules come from source
  ``linux-restricted-modules``: ``linux-modules-nvidia-<b>-server[-open]-<kernel release>`` (depends on
  ``linux-signatures-nvidia-<kernel release>`` and ``linux-objects-nvidia-<b>-server-<kernel release>``)
  and the flavour metapackage ``linux-modules-nvidia-<b>-server[-open]-<flavour>`` (``generic``,
  ``generic-hwe-24.04``, ...), which Provides ``nvidia-dkms-<b>-server (= <driver version>)``.
  Their versions are kernel versions (6.8.0-151.151), never driver versions.
* **Debian** (NVIDIA's debian12 CUDA repository follows Debian's ``nvidia-graphics-drivers`` source:
  no branch in the names, versions ``580.95.05-1``): ``nvidia-driver`` (desktop), ``nvidia-driver-cuda``
  (compute), ``nvidia-kernel-dkms`` / ``nvidia-kernel-open-dkms``, ``libcuda1``, ``libnvidia-ml1``,
  ``nvidia-smi``, ``nvidia-persistenced``, ``firmware-nvidia-gsp``, ``libglx-nvidia0``, ... and the branch
  metapackage ``cuda-drivers-<b>``. NVIDIA documents the compute-only install as
  ``nvidia-driver-cuda nvidia-kernel-dkms`` and the branch lock as an apt preference on the source
  packages (``Package: src:*nvidia*:any src:cuda-drivers:any``). ``cuda-drivers-580`` depends on its
  parts with ``>=`` only, so without a pin apt takes 590 packages of the same names.
"""

from __future__ import annotations

import fnmatch

from ansible_collections.volta.serving.plugins.module_utils import _apt

# Binary packages of Debian's nvidia-graphics-drivers source (bookworm 535.261.03-1, recorded from
# deb.debian.org .../bookworm/non-free{,-firmware}/binary-amd64/Packages.xz) whose names neither
# nvidia-* nor libnvidia-* catch.
DEBIAN_OTHER_NAMES = (
    "libcuda1", "libcudadebugger1", "libegl-nvidia0", "libgl1-nvidia-glvnd-glx", "libgles-nvidia1",
    "libgles-nvidia2", "libglx-nvidia0", "libnvcuvid1", "libnvoptix1", "firmware-nvidia-gsp",
    "xserver-xorg-video-nvidia",
)
# Source packages of the driver (NVIDIA's documented apt branch lock names the same ones).
DRIVER_SOURCES = ("*nvidia*", "cuda-drivers")
BASE_PATTERNS = ("nvidia-*", "libnvidia-*", "cuda-drivers*")
MODULE_SOURCES = ("dkms", "precompiled")


def naming(distribution):
    """'debian' or 'ubuntu' (the package naming a distribution's driver repository uses)."""
    return "debian" if distribution == "Debian" else "ubuntu"


def kernel_packages(branch, kernel_module, kernel_release, flavour):
    """Ubuntu's precompiled module packages: the running kernel's, and the flavour's that follows updates."""
    open_sfx = "-open" if kernel_module == "open" else ""
    stem = f"linux-modules-nvidia-{branch}-server{open_sfx}-"
    return [stem + kernel_release] + ([stem + flavour] if flavour else [])


def _ubuntu_userspace(branch, headless, kernel_module, module_source):
    sfx = f"-{branch}-server"
    open_sfx = "-open" if kernel_module == "open" else ""
    if not headless:
        return ["nvidia-driver" + sfx + open_sfx]
    meta = "nvidia-headless-no-dkms" if module_source == "precompiled" else "nvidia-headless"
    return [meta + sfx + open_sfx, "nvidia-utils" + sfx]


def _debian_userspace(headless, kernel_module):
    dkms = "nvidia-kernel-open-dkms" if kernel_module == "open" else "nvidia-kernel-dkms"
    # nvidia-driver-cuda first: it is the main package (compute) in both sets.
    return ["nvidia-driver-cuda"] + ([] if headless else ["nvidia-driver"]) + [dkms]


def problems(distribution, source, module_source, headless=False, flavour="generic"):
    """Refusals of a combination, each "what. Why: ... Fix: ..." (empty when it is fine)."""
    found = []
    if module_source == "precompiled" and not headless and not flavour and naming(distribution) == "ubuntu":
        found.append("nvidia_driver_module_source precompiled with the full driver needs "
                     "nvidia_driver_precompiled_flavour. Why: nvidia-driver-<branch>-server depends on "
                     "nvidia-dkms-<branch>-server, which only the flavour metapackage "
                     "linux-modules-nvidia-<branch>-server-<flavour> provides; without it apt installs DKMS "
                     "too. Fix: set nvidia_driver_precompiled_flavour (generic), or nvidia_driver_headless: true.")
    if module_source not in MODULE_SOURCES:
        found.append(f"nvidia_driver_module_source {module_source!r} is not one of "
                     f"{', '.join(MODULE_SOURCES)}. Fix: pick one of them.")
    elif module_source == "precompiled" and naming(distribution) == "debian":
        found.append(f"nvidia_driver_module_source precompiled is not available on {distribution}. Why: "
                     "Canonical's signed linux-modules-nvidia-* packages exist in the Ubuntu archive only; "
                     "NVIDIA's debian12 repository builds the module with DKMS. Fix: set "
                     "nvidia_driver_module_source to dkms.")
    elif module_source == "precompiled" and source != "ubuntu":
        found.append("nvidia_driver_module_source precompiled needs nvidia_driver_source ubuntu. Why: the "
                     "precompiled modules are built for the Ubuntu archive's driver versions, not NVIDIA's "
                     "repository's. Fix: set nvidia_driver_source to ubuntu, or use dkms.")
    return found


def hold_patterns(distribution, branch):
    """dpkg-query name patterns of the driver packages to hold."""
    if naming(distribution) == "debian":
        return list(BASE_PATTERNS) + [n + "*" for n in DEBIAN_OTHER_NAMES]
    return [*BASE_PATTERNS, f"xserver-xorg-video-nvidia-{branch}-server*",
            f"linux-modules-nvidia-{branch}-server-*", f"linux-objects-nvidia-{branch}-server-*",
            "linux-signatures-nvidia-*"]


def blacklist_regexes(patterns):
    """unattended-upgrades Package-Blacklist regexes for dpkg-query glob patterns (prefix globs only)."""
    return ["^" + p[:-1].replace(".", "\\.").replace("+", "\\+") for p in patterns]


def pin_packages(distribution, patterns):
    """The ``Package:`` value of the apt preference: source packages on Debian (NVIDIA's documented
    form), name globs on Ubuntu (the linux-modules-* are kernel-versioned and must stay out)."""
    if naming(distribution) == "debian":
        return " ".join(f"src:{s}:any" for s in DRIVER_SOURCES)
    return " ".join(p for p in patterns if not p.startswith("linux-"))


def plan(distribution, branch, headless=False, kernel_module="proprietary", source="ubuntu",
         module_source="dkms", kernel_release="", flavour="generic"):
    """Everything the role needs to install, hold and pin the driver on one host (see DOCUMENTATION)."""
    branch = str(branch)
    debian = naming(distribution) == "debian"
    precompiled = module_source == "precompiled" and not debian
    userspace = (_debian_userspace(headless, kernel_module) if debian
                 else _ubuntu_userspace(branch, headless, kernel_module, module_source))
    patterns = hold_patterns(distribution, branch)
    return {
        "naming": naming(distribution),
        "packages": userspace,
        "main_package": userspace[0],
        "module_packages": kernel_packages(branch, kernel_module, kernel_release, flavour) if precompiled else [],
        "needs_dkms": not precompiled,
        "hold_patterns": patterns,
        "hold_sources": list(DRIVER_SOURCES) if debian else [],
        "blacklist_regexes": blacklist_regexes(patterns),
        "pin_packages": pin_packages(distribution, patterns),
        "problems": problems(distribution, source, module_source, headless, flavour),
    }


def is_driver_package(name, source, patterns, sources):
    """Whether a package (name, source package) belongs to the driver by the plan's patterns."""
    return (any(fnmatch.fnmatchcase(name, p) for p in patterns)
            or any(fnmatch.fnmatchcase(source or "", s) for s in sources))


def installed(lines, patterns, sources=()):
    """dpkg-query rows "name version want status [source]" -> {installed: {name: version}, held: [names]}.

    Only installed packages of the driver count (by name pattern, or by source package where
    *sources* are given: Debian's driver packages have many names but one source).
    """
    found, held = {}, []
    for fields in _apt.installed_rows(lines):
        source = fields[4].split(":")[0] if len(fields) > 4 else fields[0]
        if not is_driver_package(fields[0], source, patterns, sources):
            continue
        found[fields[0]] = fields[1]
        if fields[2] == "hold":
            held.append(fields[0])
    return {"installed": found, "held": sorted(held)}
