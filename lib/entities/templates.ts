/**
 * The path grammar of the API (docs/http-api.md, "Paths"), read one way everywhere: the router,
 * the authorizer's `requiredRight`, entity paths written in bodies and stored on messages.
 * A template is `/`-separated literal segments and parameters (`{q}`); it is matched against
 * segments that are already percent-decoded.
 *
 * A literal that starts with `$` (a subqueue: `$deadletterqueue`) matches in any case, as
 * Service Bus takes it, and arrives decoded when sent as `%24`. Other literals match exactly
 * (the authorizer lower-cases whole paths first). A parameter matches any segment: what makes
 * a valid name or sequence number is for the caller to say, as it parses (B2).
 */

export type TemplatePart = { literal: string; anyCase: boolean } | { param: string };

const PARAMETER = /^\{(\w+)\}$/;

const compiled = new Map<string, readonly TemplatePart[]>();

/** The parts of a template, compiled once per template text. */
export function templateParts(template: string): readonly TemplatePart[] {
  let parts = compiled.get(template);
  if (!parts) {
    parts = template
      .split('/')
      .filter(Boolean)
      .map((segment): TemplatePart => {
        const param = PARAMETER.exec(segment)?.[1];
        return param === undefined ? { literal: segment, anyCase: segment.startsWith('$') } : { param };
      });
    compiled.set(template, parts);
  }
  return parts;
}

export interface TemplateMatch {
  params: Record<string, string>;
  /** The segments after the template; empty unless matched as a prefix. */
  rest: string[];
}

/**
 * Matches `segments` against `template`: the whole path, or with `prefix` only its start
 * (an entity's path, with whatever follows it in `rest`).
 */
export function matchTemplate(template: string, segments: readonly string[], options: { prefix?: boolean } = {}): TemplateMatch | undefined {
  const parts = templateParts(template);
  if (segments.length < parts.length || (!options.prefix && segments.length !== parts.length)) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const segment = segments[i]!;
    if ('param' in part) params[part.param] = segment;
    else if (part.literal !== (part.anyCase ? segment.toLowerCase() : segment)) return undefined;
  }
  return { params, rest: segments.slice(parts.length) };
}
