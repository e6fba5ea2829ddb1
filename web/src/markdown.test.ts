import { describe, expect, it } from "vitest";
import { handlesOf, plainWords, renderInline, renderMarkdown } from "./markdown";

describe("safe Markdown", () => {
  it("draws emphasis, code and lists", () => {
    const html = renderMarkdown("**bold** and `code`\n\n- one\n- two");
    expect(html).toContain("<strong>bold</strong>");
    expect(html).toContain("<code>code</code>");
    expect(html).toContain("<li>one</li>");
  });

  it("never passes raw HTML through", () => {
    const html = renderMarkdown('<img src=x onerror="alert(1)"><script>alert(2)</script>');
    expect(html).not.toContain("<img");
    expect(html).not.toContain("<script");
    expect(html).toContain("&lt;script&gt;");
  });

  it("refuses script links and draws images as links", () => {
    expect(renderMarkdown("[x](javascript:alert(1))")).not.toContain("href");
    const img = renderMarkdown("![a cat](https://example.org/cat.png)");
    expect(img).not.toContain("<img");
    expect(img).toContain('href="https://example.org/cat.png"');
  });

  it("opens links in a new tab without an opener", () => {
    expect(renderMarkdown("see https://example.org")).toContain('rel="noopener noreferrer nofollow"');
  });

  it("marks mentions that reach somebody, and the reader's own", () => {
    const known = new Map([
      ["ledger", "hrn_1"],
      ["maya", "usr_2"],
    ]);
    const html = renderMarkdown("@Ledger find it, @maya. @nobody", known, "usr_2");
    expect(html).toContain('<span class="mention">@Ledger</span>');
    expect(html).toContain('<span class="mention mention-me">@maya</span>.');
    expect(html).toContain("@nobody");
    expect(html).not.toContain(">@nobody<");
  });

  it("does not mark inside tags", () => {
    const html = renderMarkdown("[@maya](https://example.org/@maya)", new Map([["maya", "usr_2"]]), null);
    expect(html).toContain('href="https://example.org/@maya"');
  });
});

describe("handles", () => {
  it("are the name without spaces, and the first word", () => {
    expect(handlesOf("Maya Chen")).toEqual(["mayachen", "maya"]);
    expect(handlesOf("Ledger")).toEqual(["ledger"]);
  });
});

describe("one line of Markdown", () => {
  it("draws a goal's emphasis inline, with no paragraph and no raw HTML", () => {
    expect(renderInline("Ship the **Q4** deck")).toBe("Ship the <strong>Q4</strong> deck");
    expect(renderInline("a <b>tag</b>")).toBe("a &lt;b&gt;tag&lt;/b&gt;");
    expect(renderInline("two\nlines")).toBe("two lines");
  });

  it("says a text's words without its markup, as a snippet shows them", () => {
    expect(plainWords("the **invoice** for `ACME` is [here](https://x.test)")).toBe("the invoice for ACME is here");
    expect(plainWords("an *urgent* one")).toBe("an urgent one");
    expect(plainWords("**")).toBe(""); // a snippet's segment that ends at the match
    expect(plainWords("@maya 2*3*4 __init__")).toBe("@maya 2*3*4 __init__");
    expect(plainWords("# Plan\n- one")).toBe("Plan\none");
  });
});
