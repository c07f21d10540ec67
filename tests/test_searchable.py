"""What BM25 indexes of a chunk (markdown.searchable): the words a reader reads."""

import asyncio

from tests.test_lexical import _Ledger, _put, _Rag
from wikirag.index.lexical import load_index, tokenize
from wikirag.index.lexical_sync import sync_search_files
from wikirag.markdown.searchable import searchable_text


def test_comments_and_math_are_left_out():
    text = "Visible words. %% hidden remark %%\n\n$$\n\\sum_{k=1}^{n} a_k b_k\n$$\n\nAfter <!-- also hidden --> it."
    words = set(tokenize(searchable_text(text)))
    assert {"visibl", "word", "after"} <= words
    assert not words & {"hidden", "remark", "sum", "k", "n", "b_k", "also"}


def test_outside_addresses_lose_their_target_but_keep_their_text():
    text = ("See [the docs](https://aws.amazon.com/fargate/ \"AWS\") and ![a diagram](https://example.org/x_(y).png) "
            "or https://github.dev/org/repo/blob/main/AWS%20Fargate.md and [Topology](obsidian://open?file=TODO).")
    words = set(tokenize(searchable_text(text)))
    assert {"doc", "diagram", "topolog"} <= words
    assert not words & {"https", "amazon", "com", "exampl", "github", "20fargat", "obsidian", "todo"}


def test_html_tags_go_and_their_text_stays():
    words = tokenize(searchable_text('<span class="git-footer">Was this page helpful?</span>'))
    assert words == tokenize("Was this page helpful?")


def test_code_wikilinks_and_links_inside_the_vault_are_kept():
    text = "Use `path includes {{query.file.folder}}`, see [[Placeholders|the placeholders]] and [IoC](Index%20of.md)."
    assert searchable_text(text) == text


def test_the_lexical_index_holds_only_the_searchable_words(tmp_path):
    rag, ledger = _Rag(), _Ledger()
    _put(rag, ledger, "proof.md", ["Cauchy sequences converge.\n\n$$\n\\sum_{k} \\epsilon_k < \\epsilon\n$$\n"])
    _put(rag, ledger, "footer.md", ["Fargate runs containers. [Edit](https://github.dev/x/Fargate.md)"])
    asyncio.run(sync_search_files(rag, ledger, tmp_path))
    index = load_index(tmp_path)
    assert index is not None
    tokens = {index.chunk_paths[i]: set(index.tokens_of(i)) for i in range(index.size)}
    assert {"cauchi", "sequenc", "converg"} <= tokens["proof.md"] and "epsilon" not in tokens["proof.md"]
    assert "edit" in tokens["footer.md"] and not tokens["footer.md"] & {"github", "dev", "https"}
    assert index.top("epsilon github", 5) == []


def test_an_index_of_another_version_is_rebuilt_by_a_run_with_nothing_to_do(tmp_path, monkeypatch):
    from tests.storekit import HashEmbedding
    from wikirag.index import lexical
    from wikirag.index.run import run_index
    from wikirag.settings import load_config

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Note.md").write_text("# Note\n\nSee [the docs](https://example.org/guide).\n", encoding="utf-8")
    config = load_config(vault, store=tmp_path / "store")
    run_index(config, embedding_func=HashEmbedding().func())
    monkeypatch.setattr(lexical, "LEXICAL_VERSION", lexical.LEXICAL_VERSION + 1)  # as after an upgrade
    assert load_index(config.workspace_dir) is None
    run_index(config, embedding_func=HashEmbedding().func())  # the vault did not change
    index = load_index(config.workspace_dir)
    assert index is not None and index.chunk_paths == ["Note.md"] and "exampl" not in index.vocab


def test_code_keeps_its_addresses_and_angle_brackets():
    text = ("Use `Map<String, Integer>` and `curl https://x.org/a`.\n\n"
            "```\n<div class=\"card\">\n```\nafter <div>x</div>")
    out = searchable_text(text)
    assert "`Map<String, Integer>`" in out and "`curl https://x.org/a`" in out and '<div class="card">' in out
    assert out.endswith("after  x ")  # outside code the tags still go


def test_only_html_elements_are_tags():
    text = "if $a<n$ and all these words $b>c$ stay; so do <string> and <date> placeholders"
    assert searchable_text(text) == text


def test_a_bare_url_ends_where_its_characters_do_even_in_cjk_prose():
    assert searchable_text("链接 https://a.com/x后面的中文内容。下一句") == "链接  后面的中文内容。下一句"
    assert searchable_text("链接https://a.com/x 后面") == "链接  后面"
    assert searchable_text("foo.www.bar and www.example.com/x ok") == "foo.www.bar and   ok"


def test_a_damaged_lexical_index_is_rebuilt_not_a_crash(tmp_path):
    from tests.storekit import HashEmbedding
    from wikirag.index.lexical import LEXICAL_FILENAME
    from wikirag.index.run import run_index
    from wikirag.settings import load_config

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Note.md").write_text("# Note\n\nZymurgy is the chemistry of brewing.\n", encoding="utf-8")
    config = load_config(vault, store=tmp_path / "store")
    run_index(config, embedding_func=HashEmbedding().func())
    saved = config.workspace_dir / LEXICAL_FILENAME
    for damage in (saved.read_bytes()[:300], b""):  # truncated (a bad zip), then empty (EOF)
        saved.write_bytes(damage)
        assert load_index(config.workspace_dir) is None
        run_index(config, embedding_func=HashEmbedding().func())  # nothing changed in the vault
        index = load_index(config.workspace_dir)
        assert index is not None and index.top("zymurgy", 1)
