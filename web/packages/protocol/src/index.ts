// @chipschat/protocol: Chips's protocol for Node harnesses.
//
// - The socket's frames (ClientFrame, what a client sends; ServerFrame, what it is sent),
//   every route's answer (Schemas) and every event's body (EventBodies), as types
//   generated from the gateway's OpenAPI and AsyncAPI documents and the event catalogue.
// - renderContext, renderRoomNote and noteWithoutRules: the words a harness tells its
//   model, the same text as the Python SDK's.

import type { components } from "./gen/api.js";

export type { components, paths } from "./gen/api.js";
export type { EventBodies, EventType } from "./gen/events.js";

/** Every named schema of the documents: answers, rows and frames. */
export type Schemas = components["schemas"];
/** A frame a client sends on /v1/ws. */
export type ClientFrame = Schemas["ClientFrame"];
/** A frame a client is sent on /v1/ws. */
export type ServerFrame = Schemas["ServerFrame"];

export {
  CONTEXT_HEADING,
  RULE_ACT,
  RULE_PASS,
  RULE_READ,
  noteWithoutRules,
  renderContext,
  renderLine,
  renderRoomNote,
  rulesFor,
} from "./render.js";
export type {
  ContextFile,
  ContextLine,
  RoomMember,
  TurnContext,
  TurnRoom,
} from "./render.js";
