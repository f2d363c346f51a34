"""Writers in one process queue on the app's writers' lock before SQLite's (okr.db.begin_write)."""
import threading

from helpers import assert_error


def in_another_thread(function):
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("value", function()))
    thread.start()
    thread.join(timeout=30)
    return result["value"]


def test_every_write_gives_the_lock_back_whatever_its_answer(app, client):
    writers = app.extensions["okr_writers"]
    assert client.post("/v1/cycles", json={"name": "ok"}).status_code == 200
    assert_error(client.post("/v1/cycles", json={"name": 5}), 400)
    assert_error(client.post("/v1/objectives", json={"name": "o", "cycle_id": "nope", "is_company": False,
                                                     "is_personal": False}), 400)
    assert_error(client.delete("/v1/cycles/nope"), 404)

    def take_and_give_back():
        taken = writers.acquire(timeout=0)  # the lock is reentrant: only another thread can tell
        if taken:
            writers.release()
        return taken

    assert in_another_thread(take_and_give_back) is True


def test_a_write_waiting_past_the_busy_timeout_for_other_writers_is_a_503(tmp_path):
    from okr import create_app
    from okr.db import init_db
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db", "BUSY_TIMEOUT_MS": 200})
    with app.app_context():
        init_db()
    holding, done = threading.Event(), threading.Event()

    def hold():
        with app.extensions["okr_writers"]:
            holding.set()
            done.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(5)
    try:
        response = app.test_client().post("/v1/cycles", json={"name": "late"})
        body = assert_error(response, 503)
        assert response.headers["Retry-After"] == "1" and "busy" in body["message"]
        assert app.test_client().get("/v1/cycles").status_code == 200  # readers never wait for it
    finally:
        done.set()
        holder.join(10)
    assert app.test_client().post("/v1/cycles", json={"name": "now"}).status_code == 200
