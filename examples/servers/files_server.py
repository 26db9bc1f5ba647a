"""Example upstream MCP server: read, search and edit files inside one root directory, never outside it."""

import mimetypes
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

try:
    from ._common import configure_logging, make_parser, serve
except ImportError:  # run as a script: python examples/servers/files_server.py
    from _common import configure_logging, make_parser, serve  # type: ignore[no-redef]

READ_ONLY = ToolAnnotations(read_only_hint=True)
DESTRUCTIVE = ToolAnnotations(destructive_hint=True)
MAX_READ_BYTES = 1_000_000
SEED_MTIME = datetime(2025, 6, 1, 12, 0, tzinfo=UTC).timestamp()
SEED_FILES = {
    "README.md": "# Acme Shop\n\nA small web shop used as a demo workspace.\n\nSee docs/architecture.md.\n",
    "docs/architecture.md": "# Architecture\n\n- web: FastAPI app in src/app.py\n- db: PostgreSQL 16\n"
    "- queue: Redis streams\n",
    "src/app.py": "from fastapi import FastAPI\n\napp = FastAPI()\n\n\n@app.get('/health')\n"
    "def health() -> dict[str, str]:\n    return {'status': 'ok'}\n",
    "src/config.py": "DATABASE_URL = 'postgresql://localhost/shop'\nPAGE_SIZE = 25\n# TODO: read from the env\n",
    "data/sales_q1.csv": "month,region,revenue\n2025-01,EU,120400\n2025-02,EU,98350\n2025-03,EU,134900\n",
    "notes/todo.txt": "TODO: rotate API keys\nTODO: add pagination to /orders\ndone: upgrade to Python 3.12\n",
    ".env.example": "DATABASE_URL=postgresql://localhost/shop\nSECRET_KEY=change-me\n",
}

RelPath = Annotated[str, Field(min_length=1, description="Path relative to the root, e.g. 'src/app.py'.")]


class Entry(BaseModel):
    path: str
    type: Literal["file", "directory"]
    size_bytes: int
    modified: datetime


class FileContent(BaseModel):
    path: str
    start_line: int
    end_line: int
    total_lines: int
    truncated: bool
    content: str


class FileInfo(Entry):
    mime_type: str | None
    line_count: int | None


class Match(BaseModel):
    path: str
    line: int | None = None
    text: str | None = None


def seed(root: Path) -> Path:
    """Write the demo workspace into `root` with fixed modification times and return it."""
    for rel, text in SEED_FILES.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for path in [*root.rglob("*"), root]:
        os.utime(path, (SEED_MTIME, SEED_MTIME))
    return root


@contextmanager
def _os_errors(action: str) -> Iterator[None]:
    """Turn a file-system failure into a tool error the model can read."""
    try:
        yield
    except OSError as exc:  # shutil.Error is an OSError too
        raise ToolError(f"Could not {action}: {exc.strerror or exc}.") from exc


def build_server(root: Path | None = None) -> MCPServer:
    """A files server confined to `root` (a freshly seeded temporary directory when omitted)."""
    base = (root or seed(Path(tempfile.mkdtemp(prefix="nexus-files-")))).resolve()
    if not base.is_dir():
        raise ValueError(f"Root {base} is not a directory.")
    server = MCPServer("files", instructions=f"Files under one workspace root ({base.name}); paths are relative to it.")

    def inside(path: str) -> Path:
        candidate = Path(path)
        resolved = (candidate if candidate.is_absolute() else base / candidate).resolve()
        if not resolved.is_relative_to(base):
            raise ToolError(f"Path {path!r} is outside the root directory; use a path relative to the root.")
        return resolved

    def existing(path: str) -> Path:
        target = inside(path)
        if not target.exists():
            raise ToolError(f"No such file or directory: {path!r}.")
        return target

    def visible(path: Path, hidden: bool) -> bool:
        """Whether a path found by a directory walk may be shown: inside the root, and not hidden unless asked."""
        parts = path.relative_to(base).parts
        return path.resolve().is_relative_to(base) and (hidden or not any(p.startswith(".") for p in parts))

    def rel(path: Path) -> str:
        return path.relative_to(base).as_posix() or "."

    def entry(path: Path) -> Entry:
        stat = path.stat()
        kind: Literal["file", "directory"] = "directory" if path.is_dir() else "file"
        size = 0 if kind == "directory" else stat.st_size
        return Entry(path=rel(path), type=kind, size_bytes=size, modified=datetime.fromtimestamp(stat.st_mtime, UTC))

    @server.tool(annotations=READ_ONLY)
    def list_directory(
        path: Annotated[str, Field(description="Directory relative to the root; '.' is the root itself.")] = ".",
        recursive: Annotated[
            bool, Field(description="Include everything below the directory, not just its children.")
        ] = False,
        include_hidden: Annotated[bool, Field(description="Include names starting with a dot.")] = False,
        max_entries: Annotated[int, Field(ge=1, le=1000, description="Maximum number of entries to return.")] = 200,
    ) -> list[Entry]:
        """List the files and subdirectories of a directory, with sizes and modification times."""
        folder = existing(path)
        if not folder.is_dir():
            raise ToolError(f"{path!r} is a file, not a directory.")
        children = folder.rglob("*") if recursive else folder.iterdir()
        return [entry(p) for p in sorted(p for p in children if visible(p, include_hidden))[:max_entries]]

    @server.tool(annotations=READ_ONLY)
    def read_file(
        path: RelPath,
        encoding: Annotated[
            Literal["utf-8", "latin-1", "ascii"], Field(description="Text encoding of the file.")
        ] = "utf-8",
        start_line: Annotated[int, Field(ge=1, description="First line to return, counting from 1.")] = 1,
        max_lines: Annotated[int, Field(ge=1, le=5000, description="Maximum number of lines to return.")] = 500,
    ) -> FileContent:
        """Read a text file, or a range of its lines."""
        target = existing(path)
        if target.is_dir():
            raise ToolError(f"{path!r} is a directory; use list_directory.")
        if target.stat().st_size > MAX_READ_BYTES:
            raise ToolError(f"{path!r} is larger than {MAX_READ_BYTES} bytes.")
        try:
            lines = target.read_text(encoding=encoding).splitlines()
        except UnicodeDecodeError as exc:
            raise ToolError(f"{path!r} is not valid {encoding} text (binary file?).") from exc
        chunk = lines[start_line - 1 : start_line - 1 + max_lines]
        return FileContent(
            path=rel(target),
            start_line=start_line,
            end_line=start_line + len(chunk) - 1,
            total_lines=len(lines),
            truncated=start_line - 1 + len(chunk) < len(lines),
            content="\n".join(chunk),
        )

    @server.tool(annotations=READ_ONLY)
    def get_file_info(path: RelPath) -> FileInfo:
        """Get the type, size, modification time, MIME type and line count of a file or directory."""
        target = existing(path)
        lines = None
        if target.is_file() and target.stat().st_size <= MAX_READ_BYTES:
            try:
                lines = len(target.read_text(encoding="utf-8").splitlines())
            except UnicodeDecodeError:
                lines = None
        mime = None if target.is_dir() else mimetypes.guess_type(target.name)[0]
        return FileInfo(**entry(target).model_dump(), mime_type=mime, line_count=lines)

    @server.tool(annotations=READ_ONLY)
    def search_files(
        pattern: Annotated[str, Field(description="Glob over paths relative to the root, e.g. '**/*.py'.")] = "**/*",
        contains: Annotated[
            str | None, Field(description="Only files containing this text; returns the matching lines.")
        ] = None,
        case_sensitive: Annotated[bool, Field(description="Match contains with exact case.")] = False,
        max_results: Annotated[int, Field(ge=1, le=500, description="Maximum number of matches to return.")] = 50,
    ) -> list[Match]:
        """Find files by glob pattern and, optionally, the lines in them that contain some text."""
        if ".." in Path(pattern).parts or Path(pattern).is_absolute():
            raise ToolError("The pattern must stay inside the root: no absolute paths or '..'.")
        needle = contains if case_sensitive or contains is None else contains.lower()
        matches: list[Match] = []
        for path in sorted(p for p in base.glob(pattern) if p.is_file() and visible(p, hidden=True)):
            if needle is None:
                matches.append(Match(path=rel(path)))
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                if needle in (line if case_sensitive else line.lower()):
                    matches.append(Match(path=rel(path), line=number, text=line.strip()))
        return matches[:max_results]

    @server.tool(annotations=DESTRUCTIVE)
    def write_file(
        path: RelPath,
        content: Annotated[str, Field(description="Text to write.")],
        mode: Annotated[
            Literal["create", "overwrite", "append"], Field(description="'create' fails if the file exists.")
        ] = "create",
        create_parents: Annotated[bool, Field(description="Create missing parent directories.")] = True,
    ) -> Entry:
        """Write text to a file: create a new one, overwrite an existing one or append to it."""
        target = inside(path)
        if target.is_dir():
            raise ToolError(f"{path!r} is a directory.")
        if mode == "create" and target.exists():
            raise ToolError(f"{path!r} already exists; use mode 'overwrite' or 'append'.")
        if not target.parent.exists() and not create_parents:
            raise ToolError(f"Directory {rel(target.parent)!r} does not exist.")
        with _os_errors(f"write {path!r}"):
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("a" if mode == "append" else "w", encoding="utf-8") as handle:
                handle.write(content)
        return entry(target)

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True))
    def create_directory(path: RelPath) -> Entry:
        """Create a directory and any missing parents; succeeds if it already exists."""
        target = inside(path)
        if target.is_file():
            raise ToolError(f"{path!r} is a file.")
        with _os_errors(f"create {path!r}"):
            target.mkdir(parents=True, exist_ok=True)
        return entry(target)

    @server.tool(annotations=DESTRUCTIVE)
    def move_path(
        source: Annotated[str, Field(min_length=1, description="File or directory to move, relative to the root.")],
        destination: Annotated[str, Field(min_length=1, description="New path relative to the root.")],
        overwrite: Annotated[bool, Field(description="Replace an existing file at the destination.")] = False,
    ) -> Entry:
        """Move or rename a file or directory within the root."""
        src, dst = existing(source), inside(destination)
        if src == base:
            raise ToolError("The root directory itself cannot be moved.")
        if dst.exists() and not (overwrite and dst.is_file()):
            raise ToolError(f"{destination!r} already exists; pass overwrite=true to replace a file.")
        with _os_errors(f"move {source!r} to {destination!r}"):
            dst.parent.mkdir(parents=True, exist_ok=True)
            return entry(Path(shutil.move(src, dst)))

    @server.tool(annotations=DESTRUCTIVE)
    def delete_path(
        path: RelPath,
        recursive: Annotated[
            bool, Field(description="Required to delete a non-empty directory and its contents.")
        ] = False,
    ) -> str:
        """Delete a file, or a directory (recursively only when asked)."""
        target = existing(path)
        if target == base:
            raise ToolError("The root directory itself cannot be deleted.")
        if target.is_dir() and any(target.iterdir()) and not recursive:
            raise ToolError(f"Directory {path!r} is not empty; pass recursive=true.")
        with _os_errors(f"delete {path!r}"):
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink()
        return f"Deleted {rel(target)}."

    return server


def main() -> None:
    parser = make_parser(__doc__)
    parser.add_argument("--root", type=Path, help="directory to serve (default: a seeded temporary directory)")
    args = parser.parse_args()
    configure_logging(args.log_level)
    if args.root is not None:
        if not args.root.is_dir():
            parser.error(f"--root {args.root} is not a directory")
        serve(build_server(args.root), args)
        return
    with tempfile.TemporaryDirectory(prefix="nexus-files-") as scratch:
        serve(build_server(seed(Path(scratch))), args)


if __name__ == "__main__":
    main()
