/**
 * Splits a SQL text that arrives in pieces (a dump streamed as a request
 * body) into statements, one pass over each character, holding only the
 * statement in progress. A statement ends at a `;` outside strings, quoted
 * names, comments and a CREATE TRIGGER's BEGIN ... END body (CASE ... END pairs
 * inside do not close it), as sqlite3 ends them and as the guard's own
 * tokenizer does (sql-statement.ts triggerEnd), so each piece is one statement
 * to it. A piece that could continue in the next chunk (a `-` that may open a
 * comment, a quote that may be doubled) waits for it.
 */

export interface SplitStatement {
  /** The statement without its `;`. */
  text: string;
  /** 1-based line of its first character that is not blank or a comment. */
  line: number;
}

type Mode = "sql" | "'" | '"' | "`" | "]" | "line-comment" | "block-comment";

function isIdChar(code: number): boolean {
  return (
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    (code >= 48 && code <= 57) ||
    code === 95 ||
    code === 36 ||
    code >= 0x80
  );
}

function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13) || code === 0xfeff;
}

export class StatementSplitter {
  private buffer = "";
  /** Where the statement in progress starts, and the next character to look at. */
  private start = 0;
  private pos = 0;
  private mode: Mode = "sql";
  private line = 1;
  private startLine = 1;
  private content = false;
  /** Where the statement's first character that is not blank or a comment is. */
  private contentStart = 0;
  private wordStart = -1;
  private words = 0;
  /** "maybe" after CREATE (and TEMP); "yes" inside CREATE TRIGGER. */
  private trigger: "no" | "maybe" | "yes" = "no";
  private openCases = 0;
  private bodyEnded = false;

  /** The statements that `chunk` completes. */
  push(chunk: string): SplitStatement[] {
    this.buffer += chunk;
    const out = this.scan(false);
    this.compact();
    return out;
  }

  /** The text after the last `;`, if it holds a statement (the end of the body is its end). */
  finish(): SplitStatement[] {
    const out = this.scan(true);
    this.endWord(this.buffer.length);
    if (this.content) {
      out.push({ text: this.buffer.slice(this.contentStart), line: this.startLine });
    }
    this.buffer = "";
    this.start = 0;
    this.pos = 0;
    this.reset();
    return out;
  }

  private reset(): void {
    this.content = false;
    this.wordStart = -1;
    this.words = 0;
    this.trigger = "no";
    this.openCases = 0;
    this.bodyEnded = false;
    this.mode = "sql";
  }

  /** Drops the text of finished statements (once per chunk, not per statement). */
  private compact(): void {
    if (this.start === 0) return;
    this.buffer = this.buffer.slice(this.start);
    this.pos -= this.start;
    this.contentStart = Math.max(0, this.contentStart - this.start);
    if (this.wordStart >= 0) this.wordStart -= this.start;
    this.start = 0;
  }

  private markContent(at: number): void {
    if (this.content) return;
    this.content = true;
    this.contentStart = at;
    this.startLine = this.line;
  }

  private countLines(from: number, to: number): void {
    for (
      let i = this.buffer.indexOf("\n", from);
      i >= 0 && i < to;
      i = this.buffer.indexOf("\n", i + 1)
    ) {
      this.line++;
    }
  }

  /** Moves `pos` to `to`, counting the lines passed. */
  private skipTo(to: number): void {
    this.countLines(this.pos, to);
    this.pos = to;
  }

  private scan(final: boolean): SplitStatement[] {
    const out: SplitStatement[] = [];
    const text = this.buffer;
    const length = text.length;
    while (this.pos < length) {
      if (this.mode !== "sql") {
        if (!this.scanQuoted(final)) break;
        continue;
      }
      const code = text.charCodeAt(this.pos);
      if (isIdChar(code)) {
        if (this.wordStart < 0) this.wordStart = this.pos;
        this.pos++;
        continue;
      }
      this.endWord(this.pos);
      const ch = text.charAt(this.pos);
      const next = text.charAt(this.pos + 1);
      if ((ch === "-" || ch === "/") && this.pos + 1 >= length && !final) break;
      if (ch === "-" && next === "-") {
        this.mode = "line-comment";
        this.pos += 2;
      } else if (ch === "/" && next === "*") {
        this.mode = "block-comment";
        this.pos += 2;
      } else if (ch === "'" || ch === '"' || ch === "`" || ch === "[") {
        this.markContent(this.pos);
        this.mode = ch === "[" ? "]" : (ch as Mode);
        this.pos++;
      } else if (ch === ";") {
        if (this.trigger !== "yes" || this.bodyEnded) {
          if (this.content) {
            out.push({ text: text.slice(this.contentStart, this.pos), line: this.startLine });
          }
          this.reset();
          this.start = this.pos + 1;
        }
        this.pos++;
      } else {
        if (ch === "\n") this.line++;
        else if (!isSpace(code)) this.markContent(this.pos);
        this.pos++;
      }
    }
    return out;
  }

  /** Inside a string, a quoted name or a comment: false when it needs more text. */
  private scanQuoted(final: boolean): boolean {
    const text = this.buffer;
    if (this.mode === "line-comment") {
      const end = text.indexOf("\n", this.pos);
      if (end < 0) {
        this.pos = text.length;
        return false;
      }
      this.pos = end;
      this.mode = "sql";
      return true;
    }
    if (this.mode === "block-comment") {
      const end = text.indexOf("*/", this.pos);
      if (end < 0) {
        // A `*` at the very end may be closed by the next chunk's `/`.
        this.skipTo(Math.max(this.pos, text.length - 1));
        return false;
      }
      this.skipTo(end + 2);
      this.mode = "sql";
      return true;
    }
    const quote = this.mode;
    const close = text.indexOf(quote, this.pos);
    if (close < 0) {
      this.skipTo(text.length);
      return false;
    }
    // A doubled quote is the quote itself (not in `[...]`), and may straddle two chunks.
    if (quote !== "]" && close + 1 >= text.length && !final) {
      this.skipTo(close);
      return false;
    }
    if (quote !== "]" && text.charAt(close + 1) === quote) {
      this.skipTo(close + 2);
      return true;
    }
    this.skipTo(close + 1);
    this.mode = "sql";
    return true;
  }

  /** A word ended at `end`: CREATE [TEMP] TRIGGER, and its body's CASE and END, matter. */
  private endWord(end: number): void {
    if (this.wordStart < 0) return;
    const first = this.buffer.charCodeAt(this.wordStart);
    const word = this.buffer.slice(this.wordStart, end).toUpperCase();
    this.markContent(this.wordStart);
    this.wordStart = -1;
    if (first >= 48 && first <= 57) return; // a number
    this.words++;
    if (this.words === 1) this.trigger = word === "CREATE" ? "maybe" : "no";
    else if (this.trigger === "maybe") {
      if (word === "TRIGGER") this.trigger = "yes";
      else if (this.words > 2 || (word !== "TEMP" && word !== "TEMPORARY")) this.trigger = "no";
    } else if (this.trigger === "yes" && !this.bodyEnded) {
      if (word === "CASE") this.openCases++;
      else if (word === "END" && this.openCases > 0) this.openCases--;
      else if (word === "END") this.bodyEnded = true;
    }
  }
}
