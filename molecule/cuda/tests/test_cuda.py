"""CUDA 12.8 from the CUDA repository stand-in, with the engine build dependencies."""

HOME = "/usr/local/cuda-12.8"


def test_toolkit_installed_and_nvcc_reports_12_8(host):
    assert host.package("cuda-toolkit-12-8").is_installed
    assert host.package("cuda-toolkit-12-8").version == "12.8.1-1"
    assert not host.package("cuda-toolkit-13-0").is_installed
    out = host.check_output(f"{HOME}/bin/nvcc --version")
    assert "Cuda compilation tools, release 12.8, V12.8.93" in out


def test_usr_local_cuda_points_at_12_8(host):
    link = host.file("/usr/local/cuda")
    assert link.is_symlink
    assert host.check_output("readlink -f /usr/local/cuda") == HOME


def test_login_shell_environment(host):
    profile = host.file("/etc/profile.d/volta-serving-cuda.sh")
    assert profile.mode == 0o644
    assert "Ansible managed" in profile.content_string
    env = host.check_output("bash -lc 'echo $CUDA_HOME; echo $PATH; echo $LD_LIBRARY_PATH; command -v nvcc'")
    cuda_home, path, ld_path, nvcc = env.splitlines()
    assert cuda_home == HOME
    assert path.split(":")[0] == f"{HOME}/bin"
    assert ld_path.split(":")[0] == f"{HOME}/lib64"
    assert nvcc == f"{HOME}/bin/nvcc"
    # sourcing it twice does not grow PATH
    twice = host.check_output("bash -lc '. /etc/profile.d/volta-serving-cuda.sh; echo $PATH'")
    assert twice.count(f"{HOME}/bin") == 1


def test_build_dependencies(host):
    for package in ("python3.11-dev", "build-essential", "ninja-build"):
        assert host.package(package).is_installed, package
    include = host.check_output("python3.11 -c \"import sysconfig; print(sysconfig.get_paths()['include'])\"")
    assert host.file(f"{include}/Python.h").exists


def test_one_signed_cuda_source(host):
    assert "cuda-debian12-x86_64.list" not in host.check_output("ls /etc/apt/sources.list.d/")
    source = host.file("/etc/apt/sources.list.d/nvidia-cuda.sources").content_string
    assert "Signed-By: /usr/share/keyrings/cuda-archive-keyring.gpg" in source
