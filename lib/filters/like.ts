/**
 * LIKE patterns: `%` any run of characters, `_` exactly one, the ESCAPE character makes the
 * next character literal. Matching is case-sensitive and per UTF-16 unit, like .NET string
 * comparison. No regular expressions: a pattern such as '%a%a%a%a%b' would make a
 * backtracking regex slow enough to stall a Lambda; the loop below is O(text * pattern).
 */

const ANY = 0; // %
const ONE = 1; // _
type Token = typeof ANY | typeof ONE | string;

export type LikePattern = readonly Token[];

/** Returns the tokens, or a message saying why the pattern is malformed. */
export function compileLike(pattern: string, escape: string | null): LikePattern | string {
  if (escape !== null && escape.length !== 1) {
    return `The ESCAPE argument must be a single character, not '${escape}'`;
  }
  const tokens: Token[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === escape) {
      const next = pattern[i + 1];
      if (next === undefined) return `The LIKE pattern '${pattern}' ends with its escape character`;
      tokens.push(next);
      i++;
    } else if (c === '%') {
      // Runs of % mean the same as one and would only cost time.
      if (tokens[tokens.length - 1] !== ANY) tokens.push(ANY);
    } else {
      tokens.push(c === '_' ? ONE : c);
    }
  }
  return tokens;
}

export function matchLike(text: string, tokens: LikePattern): boolean {
  let t = 0;
  let p = 0;
  let star = -1; // index of the last % seen
  let resume = 0; // text position that % currently stands for up to
  while (t < text.length) {
    const tok = tokens[p];
    if (tok !== undefined && tok !== ANY && (tok === ONE || tok === text[t])) {
      t++;
      p++;
    } else if (tok === ANY) {
      star = p++;
      resume = t;
    } else if (star >= 0) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (tokens[p] === ANY) p++;
  return p === tokens.length;
}
