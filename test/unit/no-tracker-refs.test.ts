/**
 * The code and tests stand on their own, as the documents do (test/unit/docs-links.test.ts):
 * a comment or a test title cites the rule it is about (docs/rules.md), never the number of an
 * issue in a tracker the repository does not link, and no source file points at a document
 * outside the repository. A GitHub reference spelled `owner/repo#123` names where it points, so
 * it stays allowed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../infra/paths.js';

const roots = ['lib', 'functions', 'infra', 'bench', 'test', 'explorer/src', 'bin', 'tools', 'samples', 'eslint.config.js', 'vitest.config.ts'];
/** Generated from lib/filters/sql.peggy, not written by hand. */
const generated = new Set(['lib/filters/sql-parser.js']);

function sourceFiles(path: string): string[] {
  const full = join(repoRoot, path);
  const entries = (() => {
    try {
      return readdirSync(full, { withFileTypes: true });
    } catch {
      return undefined; // a file, not a folder
    }
  })();
  if (!entries) return /\.(ts|js|mjs)$/.test(path) ? [path] : [];
  return entries.filter((e) => e.name !== 'node_modules').flatMap((e) => sourceFiles(relative(repoRoot, join(full, e.name))));
}

/** This file spells out what the checks catch, as examples. */
const self = 'test/unit/no-tracker-refs.test.ts';
const files = roots.flatMap(sourceFiles).filter((f) => !generated.has(f) && f !== self);

/** `#12`, `#10.18`, after a space, a bracket or a quote; `owner/repo#401` and `a#b` are not tracker numbers. */
const trackerNumber = /(?:^|[\s(['"`])#\d+(?:\.\d+)?\b/;
/** Documents that lived beside the repository once. */
const outsideDocument = /\.\.\/shared\b|\/work\/shared\b|\b(?:SPEC|API|DESIGN|SESSIONS)\.md\b/;

function offending(pattern: RegExp): string[] {
  return files.flatMap((file) =>
    readFileSync(join(repoRoot, file), 'utf8')
      .split('\n')
      .flatMap((line, i) => (pattern.test(line) ? [`${file}:${i + 1}: ${line.trim().slice(0, 120)}`] : [])),
  );
}

describe('source and test files stand on their own', () => {
  it('finds the files it checks', () => {
    expect(files).toEqual(expect.arrayContaining(['lib/broker/receive.ts', 'functions/api/handler.ts', 'test/unit/docs-links.test.ts', 'eslint.config.js']));
  });

  it('cite rule ids, never tracker issue numbers, in comments and test titles', () => {
    expect(offending(trackerNumber)).toEqual([]);
  });

  it('point at no document outside the repository', () => {
    expect(offending(outsideDocument)).toEqual([]);
  });

  it('the checks catch what they are for', () => {
    for (const line of ['// see #14', " it('B2 #10.18: a body', () => {", ' * (issue #10, "Bad input")', "describe('#13 sessions'"])
      expect(line).toMatch(trackerNumber);
    for (const line of [' * Azure/azure-service-bus#401).', 'const x = this.#field;', "color: '#fff'"]) expect(line).not.toMatch(trackerNumber);
    for (const line of [' * (API.md "Messages")', ' * see ../shared/SPEC.md', ' * SESSIONS.md']) expect(line).toMatch(outsideDocument);
    expect(' * docs/http-api.md, docs/rules.md').not.toMatch(outsideDocument);
  });
});
