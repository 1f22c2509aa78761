"""evalsite.egress without Django: the decision over resolved addresses (every range, every spelling), the
URL check, the operator's allowance, and the guarded transport against a real server on 127.0.0.1, its host
resolved by a resolver the test scripts (so no name or address outside this machine is ever looked up or
called: private and link-local answers are refused before any connection)."""

from __future__ import annotations

import ipaddress
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from evalsite.egress import (
    LOOPBACK_NETWORKS,
    EgressPolicy,
    EgressRefused,
    GuardedTransport,
    address_rule,
    check_url,
    literal_address,
    origin,
)

STRICT = EgressPolicy()
LOOPBACK = EgressPolicy.parse(LOOPBACK_NETWORKS)


@pytest.mark.parametrize(
    ("address", "rule"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("169.254.169.254", "link-local"),  # cloud metadata
        ("10.0.0.1", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.254", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "shared"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "private"),
        ("255.255.255.255", "private"),
        ("192.0.2.1", "private"),  # documentation
        ("198.18.0.1", "private"),  # benchmarking
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
        ("::ffff:169.254.169.254", "link-local"),
        ("::ffff:10.0.0.1", "private"),
        ("2002:7f00:1::", "loopback"),  # 6to4 carrying 127.0.0.1
        ("2002:a00:1::", "private"),  # 6to4 carrying 10.0.0.1
        ("::127.0.0.1", "reserved"),  # IPv4-compatible (deprecated)
        ("64:ff9b::7f00:1", "reserved"),  # NAT64
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("::ffff:8.8.8.8", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_address_rule_names_the_range_that_refuses_an_address(address, rule):
    assert address_rule(ipaddress.ip_address(address)) == rule


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),  # decimal
        ("0177.0.0.1", "127.0.0.1"),  # octal
        ("0x7f.1", "127.0.0.1"),  # hexadecimal, shortened
        ("0x7F000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("[::1]", "::1"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("example.com", None),
        ("1e100.net", None),
        ("08.0.0.1", None),  # no resolver reads this as an address
    ],
)
def test_literal_address_reads_every_spelling_a_resolver_takes(host, address):
    found = literal_address(host)
    assert (None if found is None else str(found)) == address


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://127.0.0.1:9200/", "loopback"),
        ("http://localhost:9200/", "loopback"),
        ("http://LOCALHOST./", "loopback"),
        ("http://search.localhost/", "loopback"),
        ("http://0.0.0.0:8000/", "unspecified"),
        ("http://0/", "unspecified"),
        ("http://2130706433/", "loopback"),
        ("http://0177.0.0.1/", "url"),  # httpx reads no octal address: not a URL it could call
        ("http://0x7f.1/", "loopback"),
        ("http://[::1]:8000/", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fe80::1]/", "link-local"),
        ("http://10.1.2.3/", "private"),
        ("https://192.168.0.10:9200/", "private"),
        ("http://100.100.100.200/", "shared"),
        ("http://user:pass@search.example.com/", "userinfo"),
        ("ftp://search.example.com/", "scheme"),
        ("file:///etc/passwd", "scheme"),
        ("http:///nohost", "scheme"),
    ],
)
def test_check_url_refuses_with_the_rule_named(url, rule):
    with pytest.raises(EgressRefused) as caught:
        check_url(url, STRICT)
    assert caught.value.rule == rule
    assert caught.value.message.startswith("base_url: ")


def test_check_url_accepts_public_addresses_and_names_it_resolves_later():
    for url in ("https://search.example.com/", "http://8.8.8.8:9200/x", "https://[2606:4700::1111]/"):
        assert check_url(url, STRICT).host


def test_the_operators_allowance_opens_networks_and_host_names():
    policy = EgressPolicy.parse(["10.0.0.0/8", "::1", "es.internal", "*.corp.example", " "])
    check_url("http://10.9.9.9:9200/", policy)
    check_url("http://[::1]/", policy)
    check_url("http://ES.Internal:9200/", policy)
    check_url("http://search.eu.corp.example/", policy)
    for url, rule in [("http://192.168.0.1/", "private"), ("http://127.0.0.1/", "loopback")]:
        with pytest.raises(EgressRefused) as caught:
            check_url(url, policy)
        assert caught.value.rule == rule
    # An allowed network covers the IPv4 address inside a mapped IPv6 one.
    check_url("http://[::ffff:10.0.0.5]/", policy)


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "bad host!", "*.", "a..b"])
def test_a_malformed_allowance_is_refused_naming_the_entry(entry):
    with pytest.raises(ValueError, match="neither a network"):
        EgressPolicy.parse([entry])


def test_origin_makes_the_default_port_explicit():
    assert origin("https://Search.example.com/a") == origin("https://search.example.com:443/b")
    assert origin("http://search.example.com/") != origin("https://search.example.com/")
    assert origin("http://search.example.com:9200/") != origin("http://search.example.com:9201/")
    assert origin("") is None


# --- the transport: resolve once, check every answer, connect to a checked address ---------------------------


class _Internal(BaseHTTPRequestHandler):
    """An internal service holding something no tenant may read; every request it gets is recorded."""

    protocol_version = "HTTP/1.1"  # keeps connections open: a second request reuses the pinned one
    seen: list[tuple[str, str, str]] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.seen.append(("GET", self.path, self.headers.get("Host", "")))
        body = b'{"secret": "internal-only"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802
        self.seen.append(("POST", self.path, self.headers.get("Host", "")))
        self.send_response(302)
        self.send_header("Location", "/elsewhere")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def internal():
    _Internal.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Internal)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _client(policy: EgressPolicy, answers: list[list[str]], asked: list[str]) -> httpx.Client:
    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return answers[min(len(asked), len(answers)) - 1]

    transport = GuardedTransport(policy, limits=httpx.Limits(max_connections=1), resolver=resolver)
    return httpx.Client(transport=transport, timeout=5)


def test_a_name_resolving_to_a_refused_address_is_refused_before_connecting(internal):
    port = internal.server_address[1]
    asked: list[str] = []
    with _client(STRICT, [["127.0.0.1"]], asked) as client, pytest.raises(EgressRefused) as caught:
        client.get(f"http://search.test:{port}/")
    assert caught.value.rule == "loopback"
    assert "search.test is 127.0.0.1" in caught.value.message
    assert asked == ["search.test"]
    assert _Internal.seen == []


@pytest.mark.parametrize(
    ("answer", "rule"),
    [
        (["169.254.169.254"], "link-local"),
        (["10.0.0.7"], "private"),
        (["127.0.0.1", "192.168.4.4"], "private"),
    ],
)
def test_every_resolved_address_is_checked_and_one_refused_refuses_the_call(internal, answer, rule):
    """The refusal of link-local and private answers is decided on the addresses alone: nothing is sent, not
    even to the allowed loopback address that came first."""
    port = internal.server_address[1]
    with _client(LOOPBACK, [answer], []) as client, pytest.raises(EgressRefused) as caught:
        client.get(f"http://search.test:{port}/")
    assert caught.value.rule == rule
    assert _Internal.seen == []


def test_the_connection_goes_to_the_checked_address_and_a_later_answer_is_checked_again(internal):
    """Pinned: the host is resolved once per connection and the socket opened to that address (the request
    still names the host). A resolver that answers otherwise the next time (DNS rebinding) is checked then."""
    port = internal.server_address[1]
    asked: list[str] = []
    with _client(LOOPBACK, [["127.0.0.1"]], asked) as client:
        assert client.get(f"http://search.test:{port}/a").json() == {"secret": "internal-only"}
        assert client.get(f"http://search.test:{port}/b").status_code == 200  # the kept connection
    assert asked == ["search.test"]
    assert [(m, p) for m, p, _ in _Internal.seen] == [("GET", "/a"), ("GET", "/b")]
    assert _Internal.seen[0][2] == f"search.test:{port}"

    asked.clear()
    with _client(LOOPBACK, [["127.0.0.1"], ["10.0.0.1"]], asked) as first:
        first.get(f"http://rebind.test:{port}/")
    with _client(LOOPBACK, [["127.0.0.1"], ["10.0.0.1"]], asked) as second, pytest.raises(EgressRefused):
        second.get(f"http://rebind.test:{port}/")
    assert asked == ["rebind.test", "rebind.test"]


def test_a_redirect_is_an_answer_never_a_second_request(internal):
    port = internal.server_address[1]
    with _client(LOOPBACK, [["127.0.0.1"]], []) as client:
        response = client.post(f"http://search.test:{port}/search", json={})
    assert response.status_code == 302
    assert [(m, p) for m, p, _ in _Internal.seen] == [("POST", "/search")]


def test_an_allowance_may_name_a_port_and_opens_no_other():
    policy = EgressPolicy.parse(
        ["es.internal:9200", "10.20.0.0/16:9200", "10.30.0.7:443", "[fd00::/8]:9200", "*.search.corp:8443"]
    )
    for url in (
        "http://es.internal:9200/",
        "http://10.20.4.5:9200/_search",
        "https://10.30.0.7/",  # https's default port, 443
        "http://[fd00::5]:9200/",
        "https://eu.search.corp:8443/",
    ):
        check_url(url, policy)
    for url, rule in [
        ("http://10.20.4.5:6379/", "private"),  # Redis beside the search service: not allowed
        ("http://10.30.0.7/", "private"),  # port 80
        ("http://[fd00::5]:22/", "private"),
    ]:
        with pytest.raises(EgressRefused) as caught:
            check_url(url, policy)
        assert caught.value.rule == rule and "on port" in caught.value.message
    # A name allowed on one port is resolved and checked when called, with the port of the call.
    assert policy.allows_host("es.internal", 9200) and not policy.allows_host("es.internal", 9300)
    assert policy.allows_address(ipaddress.ip_address("10.20.0.1"), 9200)
    assert not policy.allows_address(ipaddress.ip_address("10.20.0.1"), 9201)


@pytest.mark.parametrize(
    "entry", ["es.internal:0", "es.internal:70000", "es.internal:http", "[fd00::/8", "[::1]x"]
)
def test_a_malformed_port_is_refused_naming_the_entry(entry):
    with pytest.raises(ValueError, match=re.escape(repr(entry))):
        EgressPolicy.parse([entry])


def test_a_connection_to_a_port_the_allowance_does_not_name_is_refused_before_connecting(internal):
    """An allowance of one service (127.0.0.1 on another port) lets no call reach the internal service beside it;
    the same address on the allowed port is called."""
    port = internal.server_address[1]
    other = EgressPolicy.parse([f"127.0.0.1:{port + 1}"])
    with _client(other, [["127.0.0.1"]], []) as client, pytest.raises(EgressRefused) as caught:
        client.get(f"http://search.test:{port}/")
    assert caught.value.rule == "loopback" and f"on port {port}" in caught.value.message
    assert _Internal.seen == []
    this = EgressPolicy.parse([f"127.0.0.1:{port}"])
    with _client(this, [["127.0.0.1"]], []) as client:
        assert client.get(f"http://search.test:{port}/a").status_code == 200
    assert [p for _, p, _ in _Internal.seen] == ["/a"]
