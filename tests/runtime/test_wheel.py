"""The wheel: `python -m build --wheel` output installs into a fresh virtualenv and works there."""
import os
import shutil
import subprocess
import site
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ["helion_kernels", "tuned_configs", "setup.py", "pyproject.toml", "README.md"]

pytest.importorskip("build")

CHECK = """
import os, sys, torch
import helion_kernels as hk
assert os.path.realpath(hk.__file__).startswith(os.path.realpath(sys.prefix)), hk.__file__
x = torch.randn(5, 37)
w = torch.randn(37)
report = hk.explain(hk.rmsnorm, x, w)
assert report.uses_kernels and report.forward[0].table == "default.json", str(report)
expected = torch.nn.functional.rms_norm(x.double(), [37], w.double(), 1e-6)
torch.testing.assert_close(hk.rmsnorm(x, w, 1e-6).double(), expected, rtol=1e-4, atol=1e-5)
print("wheel ok")
"""


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"{cmd}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_wheel_installs_into_fresh_venv(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, source / name)
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(source)])
    (wheel,) = dist.glob("*.whl")
    assert wheel.name.endswith("-py3-none-linux_x86_64.whl"), wheel.name
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    # torch and triton come from the environment running the tests, which may itself be a venv
    # (whose packages --system-site-packages does not reach): point the new venv at it explicitly.
    (purelib,) = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.split()
    Path(purelib, "parent_env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HK_TUNED_CONFIGS", "HK_ARCH")}
    env.update(TRITON_INTERPRET="1", PIP_NO_INDEX="1")
    run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], env=env, cwd=tmp_path)
    assert "wheel ok" in run([str(python), "-c", CHECK], env=env, cwd=tmp_path).stdout
    info = run([str(python), "-m", "helion_kernels", "info"], env=env, cwd=tmp_path).stdout
    assert "helion_kernels/tuned_configs" in info and "table default.json" in info
