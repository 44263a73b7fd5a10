"""vigil_build - the PEP 517 build backend of the vigil-timing distribution.

It builds the wheel (and the sdist) of the one module, vigil_timing.py,
with the standard library alone, so that ``pip install`` from the source
tree needs no package index and no setuptools or wheel in the virtual
environment: pyproject.toml asks for no build requirements at all.

The metadata comes from pyproject.toml's [project] table, of which it
reads the plain string keys (name, version, description, requires-python,
readme) and license.text.  Nothing is written into the source tree.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

MODULE = "vigil_timing.py"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _project():
    """The [project] table's string values (and license.text)."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = re.search(r"^\[project\]\n(.*?)(?=^\[|\Z)", text, re.S | re.M)
    if not table:
        raise RuntimeError("pyproject.toml has no [project] table")
    meta = dict(re.findall(r'^([a-z-]+)\s*=\s*"([^"]*)"', table.group(1), re.M))
    lic = re.search(r'^license\s*=\s*\{\s*text\s*=\s*"([^"]*)"', table.group(1), re.M)
    if lic:
        meta["license"] = lic.group(1)
    for key in ("name", "version"):
        if key not in meta:
            raise RuntimeError("pyproject.toml: [project] has no " + key)
    return meta


def _metadata(meta):
    lines = ["Metadata-Version: 2.1", "Name: " + meta["name"],
             "Version: " + meta["version"]]
    for key, field in (("description", "Summary"), ("requires-python", "Requires-Python"),
                       ("license", "License")):
        if key in meta:
            lines.append("%s: %s" % (field, meta[key]))
    body = ""
    if "readme" in meta:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(HERE, meta["readme"]), encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _stem(meta):
    """name-version as wheel and sdist file names spell it."""
    return "%s-%s" % (re.sub(r"[-_.]+", "_", meta["name"]).lower(), meta["version"])


def _wheel(wheel_directory, files):
    """A py3-none-any wheel of FILES, {archive name: bytes}, plus its RECORD."""
    meta = _project()
    stem = _stem(meta)
    info = stem + ".dist-info/"
    files = dict(files)
    files[info + "METADATA"] = _metadata(meta).encode("utf-8")
    files[info + "WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: vigil_build\n"
                             b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append("%s,sha256=%s,%d" % (name, digest.decode(), len(data)))
    record.append(info + "RECORD,,")
    files[info + "RECORD"] = ("\n".join(record) + "\n").encode("utf-8")
    name = stem + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w",
                         zipfile.ZIP_DEFLATED) as whl:
        for arc, data in files.items():
            whl.writestr(arc, data)
    return name


def _read(name):
    with open(os.path.join(HERE, name), "rb") as f:
        return f.read()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {MODULE: _read(MODULE)})


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # PEP 660: a .pth file that puts this directory on sys.path.
    return _wheel(wheel_directory, {"vigil_timing.pth": (HERE + "\n").encode("utf-8")})


def build_sdist(sdist_directory, config_settings=None):
    meta = _project()
    stem = _stem(meta)
    name = stem + ".tar.gz"
    members = {"PKG-INFO": _metadata(meta).encode("utf-8")}
    for src in ("pyproject.toml", "README.md", MODULE, "build_backend/vigil_build.py"):
        members[src] = _read(src)
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz",
                      format=tarfile.PAX_FORMAT) as tar:
        for arc, data in members.items():
            ti = tarfile.TarInfo(stem + "/" + arc)
            ti.size = len(data)
            ti.mode = 0o644
            tar.addfile(ti, io.BytesIO(data))
    return name
