"""Test support: a scripted idemstore peer on 127.0.0.1, for what a real server cannot be made to
do on cue (answer late, never answer, send garbage) and to count exactly what it received.

Every connection's Hello is answered with a HelloReply. Every other request is recorded in
`requests` as (connection number, request id, the keys of its ops) and handed to
`respond(server, connection, request_id)`, which may send frames, close, or do nothing.
"""
import socket
import threading

import wire_builders as wb
from idemstore import _codec
from idemstore._proto import ApplyRequest, Frame
from idemstore._proto.Body import Body


class Connection:
    def __init__(self, number, sock):
        self.number = number
        self.sock = sock

    def send(self, body):
        self.sock.sendall(wb.framed(body))

    def send_raw(self, data):
        self.sock.sendall(data)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def _keys(frame):
    if frame.BodyType() != Body.ApplyRequest:
        return []
    request = ApplyRequest.ApplyRequest()
    request.Init(frame.Body().Bytes, frame.Body().Pos)
    ops = [request.Ops(i) for i in range(request.OpsLength())]
    return [bytes(op.Key(j) for j in range(op.KeyLength())) for op in ops]


class FakeServer:
    def __init__(self, respond):
        self.respond = respond
        self.requests = []  # (connection number, request id, [keys])
        self.connections = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self._listener.getsockname()[1]
        self._open = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self._listener.close()
        for c in list(self._open):
            c.close()

    def _accept(self):
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                conn = Connection(self.connections, sock)
            self._open.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        reader = _codec.FrameReader()
        try:
            while True:
                data = conn.sock.recv(65536)
                if not data:
                    return
                for body in reader.feed(data):
                    frame = Frame.Frame.GetRootAs(body)
                    if frame.BodyType() == Body.Hello:
                        conn.send(wb.hello_reply(frame.Id()))
                        continue
                    with self._lock:
                        self.requests.append((conn.number, frame.Id(), _keys(frame)))
                    self.respond(self, conn, frame.Id())
        except OSError:
            return
