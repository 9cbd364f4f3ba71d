"""Caller-given endpoints: refused unless allowed, never given the server's key; odd paths are clear errors."""

from __future__ import annotations

import pytest

from tools.endpoints import check_caller_endpoint, key_for, normalise
from tools.errors import AccessDenied, InvalidInput
from tools.paths import resolve_input, sample_path
from tools.settings import reload_settings

CONFIGURED = "https://llm.example.org/v1"


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", CONFIGURED + "/")
    monkeypatch.setenv("OPENAI_API_KEY", "server-secret")
    monkeypatch.setenv("RESEARCH_MCP_ALLOWED_ENDPOINTS", '["http://127.0.0.1:8080/v1", "https://other.example.org"]')
    reload_settings()


def test_normalise_lowercases_drops_default_port_and_trailing_slash() -> None:
    assert normalise("HTTPS://LLM.Example.org:443/v1/") == "https://llm.example.org/v1"
    assert normalise("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    for bad in ("file:///etc/passwd", "ftp://x.org", "gopher://x", "javascript:alert(1)", "", "http://",
                "http://user:pw@x.org/v1", "http://x.org\r\nHost: evil", "http://x.org:99999/"):
        with pytest.raises(InvalidInput):
            normalise(bad)


def test_a_caller_endpoint_is_refused_unless_allowed(configured) -> None:
    assert check_caller_endpoint("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/v1"
    assert check_caller_endpoint("http://127.0.0.1:8080/v1/completions") == "http://127.0.0.1:8080/v1/completions"
    assert check_caller_endpoint("https://other.example.org/api") == "https://other.example.org/api"
    assert check_caller_endpoint(CONFIGURED) == CONFIGURED
    for refused in ("http://127.0.0.1:8081/v1", "http://127.0.0.1:8080/v10", "https://other.example.org.evil.com",
                    "http://169.254.169.254/latest", "https://llm.example.org/v2"):
        with pytest.raises(AccessDenied) as exc:
            check_caller_endpoint(refused)
        assert "RESEARCH_MCP_ALLOWED_ENDPOINTS" in str(exc.value)
    with pytest.raises(InvalidInput, match="http and https"):
        check_caller_endpoint("file:///etc/passwd")


def test_nothing_is_allowed_by_default(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", CONFIGURED)
    reload_settings()
    with pytest.raises(AccessDenied):
        check_caller_endpoint("http://127.0.0.1:8080/v1")


def test_the_server_key_goes_only_to_the_configured_endpoint(configured) -> None:
    assert key_for(CONFIGURED) == "server-secret"
    assert key_for("HTTPS://llm.example.org:443/v1/") == "server-secret"
    for other in ("http://127.0.0.1:8080/v1", "https://llm.example.org/v1/x", "http://llm.example.org/v1",
                  "https://llm.example.org.evil.com/v1", "not a url"):
        assert key_for(other) is None


@pytest.mark.parametrize("path", ["a\x00b", "ok/\x00/x", "x" * 100_000, "line\nbreak", "sample://eo/\x00"])
def test_paths_with_nul_control_characters_or_huge_length_are_invalid_input(path: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        resolve_input(path)
    assert "path" in str(exc.value).lower()


def test_sample_paths_check_their_text_too() -> None:
    with pytest.raises(InvalidInput):
        sample_path("eo/" + "x" * 5000)
