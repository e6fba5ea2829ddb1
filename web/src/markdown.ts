// Safe Markdown for the room: markdown-it with raw HTML off, so a message's text can
// never put markup of its own on the page (its renderer escapes every character of it);
// links are only http(s)/mailto and open in a new tab; @handles become mention chips.
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false });

// markdown-it already refuses javascript:, vbscript:, file: and most data: URLs; narrow
// it to the schemes a chat needs.
const SAFE_LINK = /^(https?:|mailto:)/i;
md.validateLink = (url: string) => SAFE_LINK.test(url.trim());

const defaultLinkOpen =
  md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  const token = tokens[idx]!;
  token.attrSet("target", "_blank");
  token.attrSet("rel", "noopener noreferrer nofollow");
  return defaultLinkOpen(tokens, idx, options, env, self);
};

// Images are drawn as links: a message does not load pictures from other sites.
md.renderer.rules.image = (tokens, idx) => {
  const token = tokens[idx]!;
  const src = md.utils.escapeHtml(String(token.attrGet("src") ?? ""));
  const alt = md.utils.escapeHtml(token.content || src);
  return SAFE_LINK.test(src) ? `<a href="${src}" target="_blank" rel="noopener noreferrer nofollow">${alt}</a>` : alt;
};

/** A participant's handles: the name without its spaces, and its first word (any case). */
export function handlesOf(name: string): string[] {
  const whole = name.replace(/\s+/g, "");
  const first = name.trim().split(/\s+/)[0] ?? "";
  return [...new Set([whole, first].filter(Boolean).map((h) => h.toLowerCase()))];
}

/** The handle the @ picker writes for a participant. */
export function handleFor(name: string): string {
  return name.replace(/\s+/g, "");
}

const MENTION = /(^|[^\w@])@([\w][\w·.\-']*)/gu;

/**
 * Mark each @handle that reaches somebody (or @all) as a mention chip. Runs on the text
 * nodes of the rendered HTML only, so it cannot break markup; `mine` marks a mention of
 * the reader.
 */
export function markMentions(html: string, known: Map<string, string>, me: string | null): string {
  return html.replace(/(<[^>]*>)|([^<]+)/g, (_all, tag: string | undefined, text: string | undefined) => {
    if (tag !== undefined) return tag;
    return (text ?? "").replace(MENTION, (match, lead: string, handle: string) => {
      const clean = handle.replace(/[.\-']+$/, "");
      const tail = handle.slice(clean.length);
      const who = clean.toLowerCase() === "all" ? "all" : known.get(clean.toLowerCase());
      if (who === undefined) return match;
      const cls = who === me ? "mention mention-me" : "mention";
      return `${lead}<span class="${cls}">@${clean}</span>${tail}`;
    });
  });
}

/** A message's text as safe HTML, with its mentions marked. */
export function renderMarkdown(text: string, known: Map<string, string> = new Map(), me: string | null = null): string {
  return markMentions(md.render(text), known, me);
}

/**
 * One line of Markdown (a run's goal, a heading) as inline HTML: emphasis, code and links
 * drawn, no paragraph around it, raw HTML refused as in a message.
 */
export function renderInline(text: string): string {
  return md.renderInline(text.replace(/\s*\n\s*/g, " "));
}

/** The words of a Markdown text without its markup: for snippets and labels. */
export function plainWords(text: string): string {
  return text
    .replace(/`([^`]*)`/g, "$1")
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/(\*\*|~~)(?=\S)([^]*?\S)\1/g, "$2")
    .replace(/(^|[^\w*])\*(?=\S)([^*]*?\S)\*(?!\w)/g, "$1$2")
    .replace(/^\s{0,3}(#{1,6}|>|[-*+]|\d+[.)])\s+/gm, "")
    .replace(/\*\*/g, "");
}
