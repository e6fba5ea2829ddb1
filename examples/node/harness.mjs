// A Node harness on @chipschat/protocol: it answers each message that is for it with what
// it heard, and tells its model (here: standard output, one JSON line a turn) the turn's
// context and room note as the package renders them.
//
//   CHIPS_URL=http://127.0.0.1:8080 CHIPS_HARNESS_TOKEN=… [CHIPS_SINCE=seq] node harness.mjs [--once]
//
// CHIPS_SINCE is the last seq it saw, to resume from; without it, it hears from now on.
// --once: stop after the first answer is acknowledged.
//
// Node 22 has WebSocket built in; on Node 20 run it with --experimental-websocket.
import { randomUUID } from "node:crypto";
import { renderContext, renderRoomNote } from "@chipschat/protocol";

const base = process.env.CHIPS_URL ?? "http://127.0.0.1:8080";
const token = process.env.CHIPS_HARNESS_TOKEN;
const once = process.argv.includes("--once");
const since = process.env.CHIPS_SINCE;
if (!token) {
  console.error("set CHIPS_HARNESS_TOKEN to the harness's token");
  process.exit(2);
}

// A socket cannot carry an Authorization header from here: a single-use ticket opens it.
const issued = await fetch(`${base}/v1/socket-tickets`, {
  method: "POST",
  headers: { Authorization: `Bearer ${token}` },
});
if (!issued.ok) {
  console.error(`no socket ticket: ${issued.status} ${await issued.text()}`);
  process.exit(1);
}
const { ticket } = await issued.json();
const socket = new WebSocket(`${base.replace(/^http/, "ws")}/v1/ws?ticket=${encodeURIComponent(ticket)}`);

/** @param {import("@chipschat/protocol").ClientFrame} frame */
const send = (frame) => socket.send(JSON.stringify(frame));
const answering = new Map(); // idempotency key → the message answered
let me = ""; // this harness's participant id, as hello says

socket.addEventListener("open", () => {
  send({ frame: "hello", protocol: { min: 1, max: 1 }, client: { name: "node-harness", version: "0.1.0" } });
});
socket.addEventListener("close", (e) => {
  if (e.code !== 1000) console.error(`socket closed: ${e.code} ${e.reason}`);
});
socket.addEventListener("message", (m) => {
  /** @type {import("@chipschat/protocol").ServerFrame} */
  const frame = JSON.parse(String(m.data));
  if (frame.frame === "hello") {
    me = frame.harness?.id ?? "";
    const subscribe = { frame: "subscribe", workspace_id: frame.workspace_id };
    send(since === undefined ? subscribe : { ...subscribe, since: Number(since) });
  } else if (frame.frame === "event" && frame.event.type === "message.new") {
    const message = frame.event;
    // Whose turn: the one agent of yours it is for, else the harness itself.
    const taker = message.for?.length === 1 ? message.for[0] : me;
    const idempotency_key = randomUUID();
    answering.set(idempotency_key, message);
    console.log(
      JSON.stringify({
        message,
        context: renderContext(message.context),
        taker,
        note: renderRoomNote(message.room, taker),
      }),
    );
    const event = {
      type: "message.post",
      space_id: message.space_id,
      text: `Heard: ${message.text}`,
      reply_to: message.message_id,
      idempotency_key,
    };
    if (taker?.startsWith("agt_")) event.actor = { kind: "agent", id: taker };
    send({ frame: "event", event });
  } else if (frame.frame === "ack" && answering.has(frame.idempotency_key)) {
    answering.delete(frame.idempotency_key);
    if (once) socket.close(1000);
  } else if (frame.frame === "error") {
    console.error(`refused: ${frame.code}: ${frame.message}`);
    if (once) process.exit(1);
  }
});
