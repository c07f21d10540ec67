"""Routing: features from a parsed note, the default policy, overrides, and the sample vault."""

from __future__ import annotations

from pathlib import Path

import pytest

from wikirag.errors import ConfigError
from wikirag.lightrag.tokens import count_tokens
from wikirag.models import ParsedNote, Resolution, WikiLink
from wikirag.plan.routing import ROUTES, note_features, override_for, parse_route_overrides, route_note, route_vault
from wikirag.settings import RouteSettings

SAMPLE = Path(__file__).resolve().parents[1] / "sample_vault"


def link(target: str, context: str = "", status: str = "resolved", path: str | None = None,
         frontmatter_key: str | None = None) -> tuple[WikiLink, Resolution]:
    resolved_path = path if path is not None else (f"{target}.md" if status != "unresolved" else None)
    return (WikiLink(raw=f"[[{target}]]", target=target, context=context, frontmatter_key=frontmatter_key),
            Resolution(status, resolved_path))  # type: ignore[arg-type]


def note(body: str, path: str = "n.md", **kw) -> ParsedNote:
    return ParsedNote(path=path, name=path[:-3], title=path[:-3], body=body, words=len(body.split()), **kw)


def test_settings_from_mapping():
    assert RouteSettings.from_mapping(None) == RouteSettings()
    s = RouteSettings.from_mapping({"min_resolved_links": "7", "max_uncovered_tokens": 40})
    assert (s.min_resolved_links, s.max_uncovered_tokens) == (7, 40)
    with pytest.raises(ConfigError, match=r"\[route\] min_links: unknown key"):
        RouteSettings.from_mapping({"min_links": 3})
    with pytest.raises(ConfigError, match="expected a whole number"):
        RouteSettings.from_mapping({"min_prose_tokens": "many"})


def test_features_count_links_targets_and_density():
    body = "Alpha links [[A]] and [[B]]. Then [[A]] again and [[Nowhere]].\n"
    outgoing = [link("A", "Alpha links A and B."), link("B", "Alpha links A and B."),
                link("A", "Then A again and Nowhere."), link("Nowhere", "Then A again and Nowhere.", "unresolved"),
                link("self", "", "self", path="n.md")]
    f = note_features(note(body), outgoing)
    assert (f.links, f.resolved_links, f.distinct_targets, f.unresolved_links) == (5, 3, 2, 1)
    assert f.words == 10 and f.link_density == 50.0
    assert f.body_tokens == count_tokens(body.strip())  # LightRAG strips documents
    assert f.uncovered_prose_tokens == 0 and f.covered_tokens == f.prose_tokens  # every sentence has a link


def test_code_and_headings_are_not_prose():
    prose = "Just some prose words here, plain and simple."
    body = f"# A heading\n\n{prose}\n\n```python\nprint('lots of code ' * 40)\n```\n"
    f = note_features(note(body), [])
    plain = note_features(note(prose), [])
    assert f.prose_tokens < f.body_tokens
    # token shares are measured by characters: close to the prose alone, not exact
    assert abs(f.prose_tokens - plain.prose_tokens) <= 0.5 * plain.prose_tokens


def test_uncovered_prose_is_what_no_link_sentence_covers():
    linked = "Turing worked at [[Bletchley Park]] during the war."
    free = "The rest of this note is long unlinked prose about many things. " * 10
    f = note_features(note(f"{linked}\n\n{free}"), [link("Bletchley Park", linked.replace("[[", "").replace("]]", ""))])
    assert 0 < f.covered_tokens < f.prose_tokens
    assert f.uncovered_prose_tokens == f.prose_tokens - f.covered_tokens
    assert abs(f.uncovered_prose_tokens - count_tokens(free)) <= 0.1 * count_tokens(free)


def test_frontmatter_links_do_not_cover_prose_and_completeness():
    n = note("Plain prose sentence here.", type="person", description="d", tags=["x"])
    f = note_features(n, [link("A", "Plain prose sentence here.", frontmatter_key="related")])
    assert f.resolved_links == 1 and f.covered_tokens == 0
    assert f.frontmatter_completeness == 0.75


def linked_note(links: int, extra_prose: str = "") -> tuple[ParsedNote, list]:
    lines = [f"- [[Target {i}]] is one of the things this map links to." for i in range(links)]
    outgoing = [link(f"Target {i}", lines[i][2:].replace("[[", "").replace("]]", "")) for i in range(links)]
    return note("\n".join(lines) + ("\n\n" + extra_prose if extra_prose else "")), outgoing


def test_policy_injects_well_linked_notes_with_little_free_prose():
    n, outgoing = linked_note(6)
    d = route_note(n, outgoing)
    assert d.route == "inject" and d.source == "policy"
    assert d.reason.startswith("6 resolved links to 6 notes (≥5)")
    assert d.features.uncovered_prose_tokens <= 3  # list markers and brackets are not prose
    prose = route_note(n, outgoing, RouteSettings(policy="prose"))
    assert prose.route == "inject" and prose.reason.startswith("6 resolved links to 6 notes, ")


def test_policy_extracts_notes_with_few_links():
    n, outgoing = linked_note(2, "Some prose that says a few more things about the subject of this note.")
    d = route_note(n, outgoing)
    assert d.route == "extract"
    assert d.reason == "2 resolved links (<5): LLM extraction with link hints"


def test_links_policy_injects_well_linked_notes_whatever_their_prose():
    n, outgoing = linked_note(8, "A long paragraph of reasoning that no link sentence covers. " * 20)
    d = route_note(n, outgoing)
    assert d.route == "inject" and d.features.uncovered_prose_tokens > 150
    assert "its prose is chunked and embedded" in d.reason


def test_prose_policy_extracts_well_linked_notes_with_much_free_prose():
    prose = RouteSettings(policy="prose")
    n, outgoing = linked_note(8, "A long paragraph of reasoning that no link sentence covers. " * 20)
    d = route_note(n, outgoing, prose)
    assert d.route == "extract" and d.sections == []  # one section (no headings): the whole note
    assert "prose tokens outside link sentences (>150)" in d.reason
    assert route_note(n, outgoing, RouteSettings(policy="prose", max_uncovered_tokens=10_000)).route == "inject"


def test_prose_policy_sends_only_the_uncovered_sections():
    links = [f"- [[Target {i}]] is one of the things this map links to." for i in range(6)]
    essay = "A long paragraph of reasoning that no link sentence covers at all. " * 20
    body = "\n".join(["# Links", *links, "", "# Essay", "", essay, "", "# More links", *links[:2]])
    outgoing = [(WikiLink(raw=f"[[Target {i}]]", target=f"Target {i}", line=2 + i,
                          context=links[i][2:].replace("[[", "").replace("]]", "")),
                 Resolution("resolved", f"Target {i}.md")) for i in range(6)]
    outgoing += [(WikiLink(raw=f"[[Target {i}]]", target=f"Target {i}", line=14 + i, context=outgoing[i][0].context),
                  Resolution("resolved", f"Target {i}.md")) for i in range(2)]
    d = route_note(note(body), outgoing, RouteSettings(policy="prose"))
    assert d.route == "extract" and "1 of 3 sections" in d.reason
    essay_line = body.split("\n").index("# Essay") + 1
    assert d.sections == [(essay_line, essay_line + 3)]


def test_unknown_policy_is_a_config_error():
    n, outgoing = linked_note(6)
    with pytest.raises(ConfigError, match="policy"):
        route_note(n, outgoing, RouteSettings(policy="vibes"))


@pytest.mark.parametrize("body", ["", "   \n\n", "# Only a heading\n", "ok"])
def test_empty_and_near_empty_notes_are_injected(body):
    d = route_note(note(body), [])
    assert d.route == "inject"
    assert "nothing for an LLM to read" in d.reason


def test_frontmatter_override_and_command_line_override():
    n, outgoing = linked_note(6)
    n.route_override = "extract"
    d = route_note(n, outgoing)
    assert (d.route, d.source, d.reason) == ("extract", "frontmatter", "frontmatter says wikirag: extract")
    d = route_note(n, outgoing, override="skip")
    assert (d.route, d.source) == ("skip", "command line")
    with pytest.raises(ConfigError):
        route_note(n, outgoing, override="maybe")


def test_invalid_frontmatter_route_is_ignored_and_named():
    n, outgoing = linked_note(6)
    n.route_override = "banana"
    d = route_note(n, outgoing)
    assert d.route == "inject" and "wikirag: 'banana' ignored" in d.reason


def test_route_overrides_parse_and_match_globs():
    parsed = parse_route_overrides(["extract", "daily/*=skip", "daily/keep.md=inject"])
    assert parsed == [("*", "extract"), ("daily/*", "skip"), ("daily/keep.md", "inject")]
    assert override_for("people/a.md", parsed) == "extract"
    assert override_for("daily/2024.md", parsed) == "skip"
    assert override_for("daily/keep.md", parsed) == "inject"
    assert override_for("x.md", []) is None
    with pytest.raises(ConfigError):
        parse_route_overrides(["daily/*=later"])


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="sample vault not present")
def test_sample_vault_routes_with_one_line_reasons():
    from wikirag.vault.model import Vault

    vault = Vault.load(SAMPLE)
    decisions = route_vault(vault)
    assert set(decisions) == set(vault.notes)
    for path, d in decisions.items():
        assert d.route in ROUTES
        assert d.reason and "\n" not in d.reason, path
    overridden = {p for p, n in vault.notes.items() if n.route_override in ROUTES}
    assert all(decisions[p].source == "frontmatter" for p in overridden)
    assert {d.route for d in decisions.values()} >= {"inject", "extract"}
    everything = route_vault(vault, overrides=["skip"])
    assert {d.route for d in everything.values()} == {"skip"}


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="sample vault not present")
def test_features_kept_from_one_routing_give_another_policy_its_own_decisions():
    """cost-estimate routes the vault under both policies, measuring each note's features once: the second
    routing decides as a fresh one would, and the first routing's decisions are left as they were."""
    from dataclasses import asdict

    from wikirag.vault.model import Vault

    vault = Vault.load(SAMPLE)
    features: dict = {}
    links = route_vault(vault, RouteSettings(policy="links"), features=features)
    assert set(features) == set(vault.notes)
    before = {p: asdict(d) for p, d in links.items()}
    prose = route_vault(vault, RouteSettings(policy="prose"), features=features)
    assert {p: asdict(d) for p, d in prose.items()} == {
        p: asdict(d) for p, d in route_vault(vault, RouteSettings(policy="prose")).items()}
    assert {p: asdict(d) for p, d in links.items()} == before
    assert any(prose[p].route != links[p].route for p in links)  # the policies differ on this vault


def test_a_pasted_image_is_no_prose_to_route_on():
    """A well-linked note with two 200 KB base64 images (markdown.payloads) routes as it does without them:
    their ~100,000 tokens counted as uncovered prose, so the "prose" policy sent the note to the LLM."""
    import base64

    image = base64.b64encode(bytes(range(256)) * 600).decode()
    plain, outgoing = linked_note(6)
    pasted = note(plain.body + f"\n\n![](data:image/png;base64,{image})\n\n<img src=\"data:image/gif;base64,{image}\">")
    assert count_tokens(pasted.body) > 50_000
    prose = RouteSettings(policy="prose")
    for n in (plain, pasted):
        d = route_note(n, outgoing, prose)
        assert d.route == "inject", d.reason
        assert d.features.uncovered_prose_tokens <= 40 and d.features.body_tokens < 150  # the stand-ins' words


def test_sections_after_a_drawing_keep_their_lines():
    """An Excalidraw drawing (markdown.payloads) is one stand-in line where it is chunked; routing reads sections
    by their lines in the note, so it masks keeping each line: the section after the drawing is its own lines."""
    import base64

    from wikirag.plan.routing import uncovered_sections

    scene = base64.b64encode(bytes(range(256)) * 40).decode()
    drawing = "\n\n".join(scene[k : k + 256] for k in range(0, len(scene), 256))
    prose = "Welchman chose the rotor order after reading the intercepts again. " * 30
    body = f"# Drawing\n\n```compressed-json\n{drawing}\n```\n\n# Notes\n\n{prose}\n"
    settings = RouteSettings(policy="prose")
    n = note(body)
    spans, total = uncovered_sections(n, [], route_note(n, [], settings).features, settings)
    assert total == 2 and spans == [(body.split("\n").index("# Notes") + 1, body.count("\n") + 1)]
