"""The report's meta (CPU): the commit label (HK_COMMIT wins; otherwise git's HEAD, marked when tracked files
differ from it, as they do in a copied tree whose .git is stale) and the link to the misses' analysis."""
import subprocess

from benchmarks.runner import _commit


def _git(repo, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_commit_label(tmp_path, monkeypatch):
    monkeypatch.delenv("HK_COMMIT", raising=False)
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "commit", "-q", "-m", "one")
    head = _git(tmp_path, "rev-parse", "--short", "HEAD")
    (tmp_path / "untracked.txt").write_text("results\n")
    assert _commit(tmp_path) == head
    (tmp_path / "a.py").write_text("x = 2\n")
    assert _commit(tmp_path) == f"{head} with uncommitted changes"
    monkeypatch.setenv("HK_COMMIT", "abc1234")
    assert _commit(tmp_path) == "abc1234"
    assert _commit(tmp_path / "missing") == "abc1234"


def test_results_link_the_misses_where_the_run_says(tmp_path):
    """An H200 report lives in benchmarks/h200/ and links ../MISSED.md; the default is MISSED.md."""
    from benchmarks.render import markdown
    meta = {"device": "cpu", "torch": "t", "triton": "t", "helion_kernels": "h", "commit": "c", "liger_kernel": "l",
            "python": "p", "date": "d", "dtype": "bfloat16", "budget_s": 1.0, "tiny": True}
    data = {"meta": meta, "ceilings": {}, "records": [], "bars": [], "finished": True}
    assert "[MISSED.md](MISSED.md)" in markdown(data)
    assert "[MISSED.md](../MISSED.md)" in markdown({**data, "meta": {**meta, "missed": "../MISSED.md"}})
