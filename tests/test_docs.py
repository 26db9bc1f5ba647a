"""The documentation site: it builds with every link and anchor checked, every page is in its navigation, every
result file it keeps is read by a page, and every source path it names exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

DOCS = ROOT / "docs"
README_LINES = 300


def _nav_pages(nav: list[object]) -> set[str]:
    pages: set[str] = set()
    for entry in nav:
        values = entry.values() if isinstance(entry, dict) else [entry]
        for value in values:
            if isinstance(value, str):
                pages.add(value)
            elif isinstance(value, list):
                pages |= _nav_pages(value)
    return pages


def test_the_site_builds_with_strict_link_and_anchor_checks(tmp_path: Path):
    """`mkdocs build --strict`: a link to a missing page or file, or to a heading that is gone, fails the build."""
    try:
        import material  # noqa: F401  (mkdocs-material)
        import mkdocs  # noqa: F401
    except ImportError as exc:  # pragma: no cover - the dev extra brings both
        pytest.fail(
            f"{exc.name} is missing: pip install -e '.[dev]' installs mkdocs and mkdocs-material", pytrace=False
        )
    site = tmp_path / "site"
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-5000:]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "benchmarks" / "index.html").is_file()


def test_every_page_is_in_the_navigation_and_every_entry_is_a_page():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert sorted(pages - nav) == []
    assert sorted(nav - pages) == []


def test_every_kept_result_file_and_image_is_read_by_a_page():
    """docs/ keeps only what a page shows: a result file no page links belongs out of the repository."""
    texts = {path: path.read_text(encoding="utf-8") for path in [*DOCS.rglob("*.md"), ROOT / "README.md"]}
    unread = []
    for path in sorted(p for p in DOCS.rglob("*") if p.is_file() and p.suffix != ".md"):
        linked = False
        for page, text in texts.items():
            relative = os.path.relpath(path, page.parent).replace(os.sep, "/")
            if f"]({relative})" in text:
                linked = True
                break
        if not linked:
            unread.append(path.relative_to(ROOT).as_posix())
    assert unread == []


SOURCE_PATH = re.compile(
    r"`((?:nexus_gateway/|tests/|scripts/|examples/)?[A-Za-z0-9_]+(?:/[A-Za-z0-9_.-]+)*\.(?:py|sh))`"
)


def _exists(name: str) -> bool:
    return (ROOT / name).exists() or (ROOT / "nexus_gateway" / name).exists()


def test_every_source_path_named_in_the_guide_exists():
    """Paths like `upstreams/_direct.py` or `tests/meta/test_run.py` name real files (the changelog keeps the names
    of its time and is not checked)."""
    stale = []
    for page in [*DOCS.rglob("*.md"), ROOT / "README.md"]:
        if page.name == "changelog.md":
            continue
        for match in SOURCE_PATH.finditer(page.read_text(encoding="utf-8")):
            name = match.group(1)
            if "/" in name and not _exists(name):
                stale.append(f"{page.relative_to(ROOT)}: {name}")
    assert stale == []


def test_the_architecture_page_states_the_layers_the_layer_test_checks():
    from tests.test_layers import LAYERS

    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    stated = " > ".join(" ".join(f"`{name}`" for name in layer) for layer in LAYERS)
    assert stated in " ".join(text.split())


def test_the_readmes_links_point_at_files_that_exist():
    """The README is read on the forge, outside the site: its relative links are checked here."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    relative = [target for target in targets if "://" not in target]
    assert len(relative) > 10
    assert sorted(target for target in relative if not (ROOT / target).exists()) == []


def test_the_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines; move the detail to docs/"
