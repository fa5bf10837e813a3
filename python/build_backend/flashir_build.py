"""FlashIR's PEP 517 build backend: a CMake-driven wheel without build
dependencies (``pip install .`` works offline).

build_wheel configures and builds the runtime's C library
(``libflashir_c.so``; ``-DFLASHIR_ENABLE_COMPILER=OFF``: no LLVM/MLIR) in
``build-wheel/`` and packs it with ``python/flashir`` as
``flashir/lib/libflashir_c.so``. A compiler for the JIT goes into the wheel
as ``flashir/bin/flashir-bundle`` where one is given: the config setting
``compiler=PATH`` (``pip install . -C compiler=PATH``) or
``$FLASHIR_WHEEL_COMPILER`` (e.g. ``build/jit/flashir-bundle`` of
``scripts/build-jit-compiler.sh``); without one, flashir.jit finds one at
run time (``$FLASHIR_COMPILER``, the PATH) or uses its cache only.
"""

import base64
import hashlib
import io
import os
import re
import stat
import subprocess
import sysconfig
import tarfile
import zipfile

NAME = "flashir"
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _version():
    with open(os.path.join(_ROOT, "python", "flashir", "__init__.py")) as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def _metadata(version):
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
            "Summary: FlashIR: an MLIR attention compiler for LLM inference "
            "(FlashInfer-named PyTorch wrappers, JIT on first use)\n"
            "Requires-Python: >=3.9\nLicense: Apache-2.0\n")


def _tag():
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{platform}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


# The environment tools run in: without pip's build isolation, whose
# PYTHONPATH hides site-packages from a pip-installed cmake's or ninja's
# Python wrapper.
_TOOL_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")}


def _tool(name):
    """The first `name` on the PATH that runs (`--version`); $CMAKE /
    $NINJA first."""
    override = os.environ.get(name.upper())
    candidates = [override] if override else []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK) and path not in candidates:
            candidates.append(path)
    for path in candidates:
        try:
            if subprocess.run([path, "--version"], capture_output=True,
                              env=_TOOL_ENV).returncode == 0:
                return path
        except OSError:
            continue
    return None


def _build_library():
    """libflashir_c.so of a runtime-only CMake build in build-wheel/."""
    build = os.path.join(_ROOT, "build-wheel")
    cmake, ninja = _tool("cmake"), _tool("ninja")
    if cmake is None:
        raise RuntimeError("building flashir needs CMake on the PATH (or $CMAKE)")
    generator = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"] if ninja else []
    subprocess.run([cmake, "-S", _ROOT, "-B", build, *generator,
                    "-DFLASHIR_ENABLE_COMPILER=OFF", "-DFLASHIR_ENABLE_TESTS=OFF",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=subprocess.DEVNULL,
                   env=_TOOL_ENV)
    subprocess.run([cmake, "--build", build, "--target", "flashir_c"], check=True,
                   stdout=subprocess.DEVNULL, env=_TOOL_ENV)
    return os.path.join(build, "lib", "CAPI", "libflashir_c.so")


def _compiler(config_settings):
    path = (config_settings or {}).get("compiler") or os.environ.get("FLASHIR_WHEEL_COMPILER")
    if path and not os.access(path, os.X_OK):
        raise RuntimeError(f"compiler={path} is not an executable")
    return path


class _Wheel:
    """A wheel being written: files and their RECORD lines."""

    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, arcname, data, executable=False):
        info = zipfile.ZipInfo(arcname, date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        self.record.append(f"{arcname},sha256={digest.decode()},{len(data)}")

    def add_file(self, arcname, path, executable=False):
        with open(path, "rb") as f:
            self.add(arcname, f.read(), executable)

    def close(self, dist_info):
        record = f"{dist_info}/RECORD"
        self.zip.writestr(record, "\n".join(self.record + [f"{record},,"]) + "\n")
        self.zip.close()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    library = _build_library()
    compiler = _compiler(config_settings)
    name = f"{NAME}-{version}-{_tag()}.whl"
    wheel = _Wheel(os.path.join(wheel_directory, name))
    package = os.path.join(_ROOT, "python", "flashir")
    for folder, dirs, files in sorted(os.walk(package)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(folder, os.path.dirname(package)).replace(os.sep, "/")
        for entry in sorted(files):
            if entry.endswith(".py"):
                wheel.add_file(f"{rel}/{entry}", os.path.join(folder, entry))
    wheel.add_file("flashir/lib/libflashir_c.so", library, executable=True)
    if compiler:
        wheel.add_file("flashir/bin/flashir-bundle", compiler, executable=True)
    dist_info = f"{NAME}-{version}.dist-info"
    wheel.add(f"{dist_info}/METADATA", _metadata(version).encode())
    wheel.add(f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: flashir_build\n"
                                     f"Root-Is-Purelib: false\nTag: {_tag()}\n").encode())
    wheel.close(dist_info)
    return name


def build_sdist(sdist_directory, config_settings=None):
    """The git-tracked sources as NAME-VERSION.tar.gz."""
    version = _version()
    files = subprocess.run(["git", "-C", _ROOT, "ls-files", "-z"], check=True,
                           capture_output=True).stdout.decode().split("\0")
    base = f"{NAME}-{version}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for rel in filter(None, files):
            path = os.path.join(_ROOT, rel)
            if os.path.isfile(path):
                tar.add(path, arcname=f"{base}/{rel}")
        pkg_info = _metadata(version).encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        tar.addfile(info, io.BytesIO(pkg_info))
    return name
