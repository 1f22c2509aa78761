"""A lost database is a 503 that says so, never a 500, and names nothing (issue 24, item 4).

Against the production server (`manage.py serve`, DEBUG off, as users run it): a database down from the start,
an SQLite file that becomes unreachable and comes back, PostgreSQL connections killed (pg_terminate_backend) and
the server going away behind a TCP proxy and coming back. Then the classification itself on real drivers'
errors, and the two handlers (DRF's and Django's handler500) in process.
"""

from __future__ import annotations

import re
import socket
import sqlite3
import time

import dj_database_url
import httpx
import pytest
import yaml
from django.db import IntegrityError, connection
from django.db.utils import ConnectionHandler
from django.test import RequestFactory

from evalsite import unavailable, views
from evalsite.api.errors import exception_handler
from goldenset.models import Collection
from tests.worker_support import Serve, TcpProxy, free_port

needs_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL (DATABASE_URL=postgres://...)"
)
SESSION_KEY = "z" * 32  # a well-formed session key: the session middleware looks it up in the database
NEVER_SAID = ("Traceback", "OperationalError", "InterfaceError", "psycopg", "sqlite", "127.0.0.1", "5432")


def assert_names_nothing(text: str, *secrets: str) -> None:
    for word in (*NEVER_SAID, *secrets):
        assert word.lower() not in text.lower(), (word, text)


def assert_api_503(response: httpx.Response, *secrets: str) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert body == {"error": {"code": "database-unavailable", "message": unavailable.MESSAGE, "details": {}}}
    assert response.headers["Retry-After"] == "5"
    assert_names_nothing(response.text, *secrets)


def assert_page_503(response: httpx.Response, *secrets: str) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["Content-Type"].startswith("text/html")
    assert "<h1>Database unavailable</h1>" in response.text
    assert response.headers["Retry-After"] == "5"
    assert_names_nothing(response.text, *secrets)


def assert_healthz_public_503(response: httpx.Response, *secrets: str) -> None:
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "down" and body["failing"][0] == "database"
    assert body["checks"]["database"].keys() == {"status", "ms"}
    assert all(set(part) <= {"status", "ms"} for part in body["checks"].values()), body
    assert_names_nothing(response.text, *secrets)


# --- the production server ---------------------------------------------------------------------------------


def test_a_database_down_from_the_start_is_a_503_everywhere_that_names_nothing(manage_env, tmp_path):
    """PostgreSQL at a port where nothing listens: the API's envelope, the dashboard's page and /healthz all say
    503 without the host, port, database or user; the log has the real error; and the worker cluster waits for
    the database instead of failing its start (three quick failures would make serve stop the web server too)."""
    port = free_port()  # bound, then closed: nothing listens there
    url = f"postgres://outage_probe_user@127.0.0.1:{port}/outage_probe_db"
    secrets = (str(port), "outage_probe_user", "outage_probe_db")
    serve = Serve(
        {**manage_env, "DATABASE_URL": url, "EVALSITE_WORKER_CLUSTERS": "1", "EVALSITE_WORKERS": "1"},
        tmp_path / "serve.log",
        processes=1,
        threads=2,
    )
    try:
        started = time.monotonic()
        serve.start(healthy=False)
        with httpx.Client(base_url=serve.url, timeout=10) as client:
            key = {"Authorization": "Bearer esk_any"}  # looked up in the database: the request needs it
            assert_api_503(client.get("/lmkit/v1/collections", headers=key), *secrets)
            assert_api_503(
                client.post("/lmkit/v1/collections", json={"collection_id": "x"}, headers=key), *secrets
            )
            assert_api_503(client.get("/lmkit/v1/jobs/00000000-0000-0000-0000-000000000000", headers=key))
            # Every operation of the schema (served without the database) answers it, and documents it.
            schema = yaml.safe_load(client.get("/api/schema").text)
            for path, methods in schema["paths"].items():
                for method, operation in methods.items():
                    target = re.sub(r"\{[a-z_]+\}", "x", path)
                    body = {"json": {}} if method in ("post", "patch") else {}
                    assert_api_503(client.request(method.upper(), target, headers=key, **body), *secrets)
                    documented = operation["responses"]["503"]
                    assert "`database-unavailable`" in documented["description"], (method, path)
                    assert "Retry-After" in documented["headers"]
            # No key at all needs no database: still the 401 it always is.
            no_key = client.get("/lmkit/v1/collections")
            assert no_key.status_code == 401 and no_key.json()["error"]["code"] == "unauthenticated"
            assert_healthz_public_503(client.get("/healthz"), *secrets)
        # A signed-in browser: its session is in the database.
        with httpx.Client(base_url=serve.url, timeout=10, cookies={"sessionid": SESSION_KEY}) as browser:
            for page in ("/", "/runs/", "/admin/"):
                assert_page_503(browser.get(page), *secrets)
            assert_healthz_public_503(browser.get("/healthz"), *secrets)

        # serve stays up: its worker waits for the database rather than exiting at once (serve gives up on a
        # child that fails to start within 5 s, three times in a row).
        time.sleep(max(0.0, started + 6.5 - time.monotonic()))
        assert serve.process is not None and serve.process.poll() is None
        log = serve.log.read_text()
        assert "the database cannot be reached" in log and "worker-1 exited" not in log, log[-3000:]
        # Logged where the operator reads it, with the detail the client is not shown.
        assert f"port {port} failed: Connection refused" in log
        assert "Service Unavailable: /runs/" in log and "Database unavailable: OperationalError" in log
    finally:
        serve.close()


@pytest.mark.skipif(connection.vendor != "sqlite", reason="an SQLite database file")
@pytest.mark.django_db(transaction=True)
def test_an_sqlite_file_that_becomes_unreachable_is_a_503_until_it_is_back(
    world, manage_env, tmp_path, django_user_model
):
    """The database's directory renamed while the server runs: 503 on the API and the dashboard; renamed
    back: 200. Each request opens its connection (DATABASE_CONN_MAX_AGE=0): an SQLite connection already open
    reads a moved file through its descriptor, so only a new connection meets the missing path."""
    from django.test import Client

    user = django_user_model.objects.create_user("ann", password="pw-123456789")
    browser = Client()
    browser.force_login(user)
    home = tmp_path / "evalsite-db-dir"
    home.mkdir()
    copy = home / "evalsite.sqlite3"
    with sqlite3.connect(connection.settings_dict["NAME"]) as source, sqlite3.connect(copy) as target:
        source.backup(target)  # the test database as it is now (the world, the session), for the server alone
    env = {
        **manage_env,
        "DATABASE_URL": f"sqlite:///{copy}",
        "DATABASE_CONN_MAX_AGE": "0",
        "EVALSITE_WORKER_CLUSTERS": "0",
    }
    serve = Serve(env, tmp_path / "serve.log", processes=1, threads=2)
    away = tmp_path / "elsewhere"
    try:
        serve.start(healthy=False)
        with httpx.Client(
            base_url=serve.url,
            timeout=10,
            headers={"Authorization": f"Bearer {world.key}"},
            cookies={"sessionid": browser.cookies["sessionid"].value},
        ) as client:
            assert client.get("/lmkit/v1/collections").status_code == 200
            assert client.get("/").status_code == 200

            home.rename(away)
            assert_api_503(client.get("/lmkit/v1/collections"), "evalsite-db-dir", str(tmp_path))
            assert_page_503(client.get("/"), "evalsite-db-dir", str(tmp_path))
            assert_healthz_public_503(client.get("/healthz"), "evalsite-db-dir", str(tmp_path))

            away.rename(home)
            response = client.get("/lmkit/v1/collections")
            assert response.status_code == 200 and "handbook" in response.text
            assert client.get("/").status_code == 200
        assert "unable to open database file" in serve.log.read_text()
    finally:
        serve.close()
        if away.exists():
            away.rename(home)


@needs_postgresql
@pytest.mark.django_db(transaction=True)
def test_postgresql_connections_killed_or_lost_mid_life_never_answer_500(
    world, manage_env, tmp_path, django_user_model
):
    """The server reaches PostgreSQL through a TCP proxy and keeps its connections (DATABASE_CONN_MAX_AGE's
    default). Its backends terminated (pg_terminate_backend): the next requests reconnect and answer 200. The
    server gone (the proxy closes every connection and refuses new ones): 503 database-unavailable on the API and
    the dashboard. Back: 200 again."""
    from django.test import Client

    user = django_user_model.objects.create_user("ann", password="pw-123456789")
    browser = Client()
    browser.force_login(user)
    db = connection.settings_dict
    proxy = TcpProxy(db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432))
    proxy.start()
    direct = dj_database_url.parse(manage_env["DATABASE_URL"])
    url = manage_env["DATABASE_URL"].replace(f":{direct['PORT']}/", f":{proxy.port}/", 1)
    env = {**manage_env, "DATABASE_URL": url, "EVALSITE_WORKER_CLUSTERS": "0"}
    serve = Serve(env, tmp_path / "serve.log", processes=1, threads=2)
    secrets = (str(proxy.port), db["NAME"])
    try:
        serve.start(healthy=False)
        with httpx.Client(
            base_url=serve.url,
            timeout=10,
            headers={"Authorization": f"Bearer {world.key}"},
            cookies={"sessionid": browser.cookies["sessionid"].value},
        ) as client:
            for _ in range(4):  # both threads hold a connection
                assert client.get("/lmkit/v1/collections").status_code == 200
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND client_port = ANY(%s)",
                    [proxy.upstream_ports()],
                )
                assert cursor.fetchone()[0] >= 1
            time.sleep(0.2)  # the terminated backends' goodbyes reach the server's sockets
            for _ in range(4):
                assert client.get("/lmkit/v1/collections").status_code == 200
                assert client.get("/").status_code == 200

            proxy.stop()
            for _ in range(3):
                assert_api_503(client.get("/lmkit/v1/collections"), *secrets)
                assert_page_503(client.get("/"), *secrets)
            assert_healthz_public_503(client.get("/healthz"), *secrets)

            proxy.start()
            assert client.get("/lmkit/v1/collections").status_code == 200
            assert client.get("/").status_code == 200
        log = serve.log.read_text()
        assert "Internal Server Error" not in log, log[-3000:]
    finally:
        serve.close()
        proxy.stop()


# --- which errors are a lost database: real drivers' errors -------------------------------------------------


@pytest.fixture
def django_error(django_db_blocker):
    """The exception Django raises for `sql` (or for connecting) on a connection of its own to `settings_dict`
    (not the test database's: pytest-django's blocker guards that one)."""
    with django_db_blocker.unblock():
        yield _django_error


def _django_error(settings_dict: dict, sql: str | None = None) -> Exception:
    handler = ConnectionHandler({"default": settings_dict})
    wrapper = handler["default"]
    try:
        if sql is None:
            wrapper.ensure_connection()
        else:
            with wrapper.cursor() as cursor:
                cursor.execute(sql)
    except Exception as exc:
        return exc
    finally:
        wrapper.close()
    raise AssertionError("no error")


def test_a_refused_postgresql_connection_is_unavailable(django_error):
    exc = django_error(dj_database_url.parse(f"postgres://u@127.0.0.1:{free_port()}/d"))
    assert type(exc).__module__ == "django.db.utils" and type(exc).__name__ == "OperationalError"
    assert unavailable.database_unavailable(exc)


def test_a_postgresql_server_that_never_answers_is_unavailable_within_the_connect_timeout(
    django_error, monkeypatch
):
    """A database host that drops packets would hold a request until the OS gives up (minutes: past gunicorn's
    timeout, so no answer at all). The settings bound the connection's making (DATABASE_CONNECT_TIMEOUT): here a
    socket that listens and never speaks, the same wait."""
    from evalsite.settings import _databases

    with socket.create_server(("127.0.0.1", 0)) as silent:
        url = f"postgres://u@127.0.0.1:{silent.getsockname()[1]}/d"
        monkeypatch.setenv("DATABASE_URL", url)
        monkeypatch.delenv("DATABASE_CONNECT_TIMEOUT", raising=False)
        assert _databases()["default"]["OPTIONS"]["connect_timeout"] == 5
        monkeypatch.setenv("DATABASE_URL", url + "?connect_timeout=9")
        assert _databases()["default"]["OPTIONS"]["connect_timeout"] == 9  # the URL's own wins
        monkeypatch.setenv("DATABASE_URL", url)
        monkeypatch.setenv("DATABASE_CONNECT_TIMEOUT", "2")
        config = _databases()["default"]
        started = time.monotonic()
        exc = django_error(config)
        took = time.monotonic() - started
    assert type(exc.__cause__).__name__ == "ConnectionTimeout" and 1.5 < took < 5, (exc, took)
    assert unavailable.database_unavailable(exc)


def test_an_sqlite_file_that_cannot_be_opened_is_unavailable_and_a_missing_table_is_not(
    django_error, tmp_path
):
    missing_dir = django_error(dj_database_url.parse(f"sqlite:///{tmp_path / 'gone' / 'x.sqlite3'}"))
    assert unavailable.database_unavailable(missing_dir)
    no_table = django_error(
        dj_database_url.parse(f"sqlite:///{tmp_path / 'x.sqlite3'}"), "SELECT * FROM no_such_table"
    )
    assert type(no_table).__name__ == "OperationalError" and "no such table" in str(no_table)
    assert not unavailable.database_unavailable(no_table)


@pytest.mark.django_db
def test_programming_errors_are_not_unavailable(world):
    with pytest.raises(IntegrityError) as caught:
        Collection.objects.create(tenant=world.tenant, slug="handbook")
    assert not unavailable.database_unavailable(caught.value)
    assert not unavailable.database_unavailable(ValueError("x"))
    assert not unavailable.database_unavailable(None)


@needs_postgresql
@pytest.mark.django_db
def test_postgresql_killed_and_timed_out_statements(world, django_error):
    """A terminated backend (57P01) and the closed connection after it are unavailable; a statement timeout
    (57014) on a live connection, and a closed cursor on a live connection, are not."""
    settings_dict = {**connection.settings_dict}
    handler = ConnectionHandler({"default": settings_dict})
    other = handler["default"]
    try:
        other.ensure_connection()
        pid = other.connection.info.backend_pid
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        errors = []
        for _ in range(2):
            try:
                with other.cursor() as cursor:
                    cursor.execute("SELECT 1")
            except Exception as exc:
                errors.append(exc)
        assert [getattr(e.__cause__, "sqlstate", "?") for e in errors] == ["57P01", None], errors
        assert all(unavailable.database_unavailable(e) for e in errors)
    finally:
        other.close()

    timed_out = django_error(settings_dict, "SET statement_timeout = 10; SELECT pg_sleep(1)")
    assert getattr(timed_out.__cause__, "sqlstate", None) == "57014"
    assert not unavailable.database_unavailable(timed_out)

    with connection.cursor() as cursor:
        pass
    with pytest.raises(Exception) as closed_cursor:
        cursor.execute("SELECT 1")
    assert type(closed_cursor.value).__name__ == "InterfaceError"
    assert not unavailable.database_unavailable(closed_cursor.value)


# --- the two handlers, in process --------------------------------------------------------------------------


@pytest.fixture
def lost_database_error(django_error) -> Exception:
    return django_error(dj_database_url.parse(f"postgres://secret_user@127.0.0.1:{free_port()}/secret_db"))


def test_drf_handler_answers_503_for_a_lost_database_and_500_for_a_bug(lost_database_error, caplog):
    response = exception_handler(lost_database_error, {})
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.data["error"]["code"] == "database-unavailable"
    assert "secret_db" not in str(response.data)
    assert "Database unavailable: OperationalError" in caplog.text and "Connection refused" in caplog.text
    assert exception_handler(ValueError("a bug"), {}).status_code == 500


@pytest.mark.parametrize("path", ["/lmkit/v1/collections", "/runs/"])
def test_handler500_answers_503_for_a_lost_database_and_500_for_a_bug(lost_database_error, path):
    request = RequestFactory().get(path)
    try:
        raise lost_database_error
    except Exception:
        response = views.server_error(request)  # as Django calls it: inside its except block
    assert response.status_code == 503 and response["Retry-After"] == "5"
    text = response.content.decode()
    assert "database-unavailable" in text if path.startswith("/lmkit/") else "Database unavailable" in text
    assert "secret_db" not in text and "secret_user" not in text
    try:
        raise ValueError("a bug")
    except ValueError:
        assert views.server_error(request).status_code == 500
