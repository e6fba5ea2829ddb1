// @chipschat/protocol renders what the Python SDK renders, byte for byte, on the shared
// fixtures (docs/protocol/render-fixtures.json, written by scripts/gen_render_fixtures.py).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  noteWithoutRules,
  renderContext,
  renderRoomNote,
  type TurnContext,
  type TurnRoom,
} from "../src/index";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = JSON.parse(
  readFileSync(join(here, "..", "..", "..", "..", "docs", "protocol", "render-fixtures.json"), "utf8"),
) as {
  contexts: { context: TurnContext | null; text: string }[];
  rooms: { room: TurnRoom | null; taker: string; note: string; without_rules: string }[];
};

describe("renderContext", () => {
  it.each(fixtures.contexts.map((c, i) => [i, c] as const))("case %i", (_i, { context, text }) => {
    expect(renderContext(context)).toBe(text);
  });
});

describe("renderRoomNote and noteWithoutRules", () => {
  it.each(fixtures.rooms.map((r, i) => [i, r] as const))("case %i", (_i, r) => {
    expect(renderRoomNote(r.room, r.taker)).toBe(r.note);
    expect(noteWithoutRules(r.room, r.taker)).toBe(r.without_rules);
  });
});

it("has cases of every kind", () => {
  expect(fixtures.contexts.length).toBeGreaterThan(4);
  expect(fixtures.rooms.length).toBeGreaterThan(8);
});
