// An agent's face (ADR 0153): its emoji, its picture, or the initial of its name — the last also
// when the picture does not load (a link that ran out, a file gone).
import { useEffect, useState } from "preact/hooks";
import { drawnFace, hasFace } from "../faces";
import { useStore } from "./hooks";

/** The face of participant `id`. `only` draws nothing for one with no face of its own. */
export function Face(props: { id: string; only?: boolean; class?: string }) {
  const store = useStore();
  const p = store.participants.get(props.id);
  const drawn = drawnFace(p, store.nameOf(props.id), location.origin);
  const picture = "picture" in drawn ? drawn.picture : null;
  const [broken, setBroken] = useState<string | null>(null);
  useEffect(() => setBroken(null), [picture]);
  if (props.only && !hasFace(p)) return null;
  const cls = `face${props.class ? ` ${props.class}` : ""}`;
  if (picture && broken !== picture) {
    return (
      <span class={`${cls} picture`} data-testid="face" data-face={p?.face ?? ""} aria-hidden="true">
        <img src={picture} alt="" onError={() => setBroken(picture)} />
      </span>
    );
  }
  if ("emoji" in drawn) {
    return (
      <span class={`${cls} emoji`} data-testid="face" data-face={drawn.emoji} aria-hidden="true">
        {drawn.emoji}
      </span>
    );
  }
  return (
    <span class={cls} data-testid="face" aria-hidden="true">
      {drawn.initial}
    </span>
  );
}
