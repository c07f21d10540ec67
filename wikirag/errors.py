"""Named exceptions. The library raises them; `cli.py` turns each into a one-line message and exit 1."""

from __future__ import annotations


class WikiragError(Exception):
    """Base class for every error wikirag raises on purpose."""


class StoreUnusable(WikiragError):
    """The store folder cannot be made or written where the settings put it."""


class VaultNotFound(WikiragError):
    """The vault folder does not exist or is not a folder."""

    @classmethod
    def at(cls, root: object) -> VaultNotFound:
        """The one wording every command uses: a file given as the vault is said to be one."""
        from pathlib import Path

        path = Path(str(root))
        if path.exists():
            return cls(f"{root}: is a file, not a vault folder")
        return cls(f"{root}: no such vault folder")

    @classmethod
    def unless_folder(cls, root: object) -> None:
        """Raise when `root` is not a folder (every reader of a vault asks this first)."""
        from pathlib import Path

        if not Path(str(root)).is_dir():
            raise cls.at(root)


class ConfigError(WikiragError):
    """A configuration value or file is invalid."""


class StoreLocked(WikiragError):
    """Another wikirag process holds the index store's lock."""


class StoreMismatch(WikiragError):
    """The index store was built for another vault, model or format version."""


class LLMNotConfigured(WikiragError):
    """An operation needs an LLM and none is configured."""


class StoreNotFound(WikiragError):
    """No index store exists where one was expected."""

    @classmethod
    def at(cls, workspace_dir: object, vault: object) -> WikiragError:
        """The one wording for a vault with no index. A vault folder that is not there (a mistyped --vault) is
        said to be missing, as `index` says it: indexing it would fail too."""
        from pathlib import Path

        if not Path(str(vault)).is_dir():
            return VaultNotFound.at(vault)
        return cls(f"{workspace_dir}: no index here; run `wikirag index {vault}` first")


class QueryFailed(WikiragError):
    """A query could not be answered (bad mode, empty question, LLM failure)."""


class ExportRefused(WikiragError):
    """An export would write where wikirag must not (among the vault's notes, onto a folder)."""


class EmbeddingFailed(WikiragError):
    """An embedding call failed (after the provider binding's own retries); the message is redacted."""
