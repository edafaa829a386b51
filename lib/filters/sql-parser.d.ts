// Declarations for the peggy-generated sql-parser.js (see sql.peggy). Written by hand on
// purpose: the results are typed in ast.ts and narrowed in parser.ts, the only importer.

export interface PeggyLocation {
  source: unknown;
  start: { offset: number; line: number; column: number };
  end: { offset: number; line: number; column: number };
}

export declare class SyntaxError extends Error {
  location: PeggyLocation;
  expected: unknown[] | null;
  found: string | null;
}

export declare const StartRules: readonly string[];

export declare function parse(input: string, options: { startRule: 'Filter' | 'Action'; grammarSource?: unknown }): unknown;
