// A line breaks into dust as it goes (hidden for me, or deleted for everyone): a wipe crosses
// the bubble from its left and its specks drift up and away in the bubble's own colours;
// Undo runs it backwards; with Reduce Motion the bubble simply fades (docs/adr/0143).
// The plan is pure (unit-tested); `dust` plays it on an element.

export const DUST_MS = 700;
export const FADE_MS = 250;

export interface Speck {
  /** Where it starts, in the bubble's box (px), and where it drifts to (dx, dy). */
  x: number;
  y: number;
  dx: number;
  dy: number;
  size: number;
  /** When it leaves, as a share of the whole (the wipe reaches it then). */
  delay: number;
}

/** A small deterministic generator, so a bubble's dust is the same each time it is drawn. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** The specks of a bubble of this size: one per ~(12 px)², at most 80; each leaves as the
 * wipe from the left reaches it, and drifts up and to the right. */
export function dustPlan(width: number, height: number, seed = 1): Speck[] {
  if (width <= 0 || height <= 0) return [];
  const n = Math.min(80, Math.max(6, Math.round((width * height) / 144)));
  const next = rng(seed);
  return Array.from({ length: n }, () => {
    const x = next() * width;
    return {
      x,
      y: next() * height,
      dx: 8 + next() * 24,
      dy: -(12 + next() * 28),
      size: 2 + Math.round(next() * 2),
      delay: (x / width) * 0.5,
    };
  });
}

/** How a line goes: dust, or a plain fade for a person who asked for less motion. */
export function motionFor(reducedMotion: boolean): "dust" | "fade" {
  return reducedMotion ? "fade" : "dust";
}

function reduced(): boolean {
  return typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;
}

/**
 * Play the line's going (or, `back`, its coming back: the same run backwards) on its
 * bubble; resolves when it is done. The element says how it last went or came
 * (`data-motion="dust-out"`, `"fade-in"`…).
 */
export async function dust(line: HTMLElement, back = false): Promise<void> {
  const bubble = line.querySelector<HTMLElement>(".bubble, .card") ?? line;
  const how = motionFor(reduced());
  line.dataset["motion"] = `${how}-${back ? "in" : "out"}`;
  const direction: PlaybackDirection = back ? "reverse" : "normal";
  try {
    if (how === "fade" || typeof bubble.animate !== "function") {
      await bubble.animate([{ opacity: 1 }, { opacity: 0 }], { duration: FADE_MS, direction, fill: back ? "none" : "forwards", easing: "ease-out" }).finished;
      return;
    }
    const box = bubble.getBoundingClientRect();
    const style = getComputedStyle(bubble);
    const colours = [style.backgroundColor, style.color, style.borderTopColor].filter((c) => c && c !== "rgba(0, 0, 0, 0)");
    const layer = document.createElement("div");
    layer.className = "dust";
    layer.setAttribute("aria-hidden", "true");
    bubble.style.position ||= "relative";
    const plays: Animation[] = [];
    dustPlan(box.width, box.height, line.id.length + Math.round(box.width)).forEach((s, i) => {
      const speck = document.createElement("span");
      speck.className = "speck";
      Object.assign(speck.style, { left: `${s.x}px`, top: `${s.y}px`, width: `${s.size}px`, height: `${s.size}px`, background: colours[i % colours.length] ?? "currentColor" });
      layer.appendChild(speck);
      plays.push(
        speck.animate(
          [
            { opacity: 0, transform: "translate(0, 0)", offset: 0 },
            { opacity: 0, transform: "translate(0, 0)", offset: s.delay },
            { opacity: 1, transform: "translate(0, 0)", offset: Math.min(0.99, s.delay + 0.05) },
            { opacity: 0, transform: `translate(${s.dx}px, ${s.dy}px)`, offset: 1 },
          ],
          { duration: DUST_MS, direction, fill: "forwards" },
        ),
      );
    });
    bubble.appendChild(layer);
    // The wipe: the bubble is masked away from its left as its specks leave.
    plays.push(
      bubble.animate(
        [
          { clipPath: "inset(0 0 0 0)", offset: 0 },
          { clipPath: "inset(0 0 0 100%)", offset: 0.55 },
          { clipPath: "inset(0 0 0 100%)", offset: 1 },
        ],
        { duration: DUST_MS, direction, fill: back ? "none" : "forwards" },
      ),
    );
    await Promise.all(plays.map((p) => p.finished));
    layer.remove();
  } catch {
    /* cancelled: the line is gone or redrawn */
  }
}
