/**
 * The repository's documents stand on their own: every relative link in README.md, the root
 * documents and docs/*.md names a file of the repository (and, with a #fragment into a Markdown
 * file, one of its headings), none points outside the repository, and none cites a tracker's
 * issue numbers.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../infra/paths.js';

const documents = [
  'README.md',
  'CONTRIBUTING.md',
  'CHANGELOG.md',
  'samples/README.md',
  ...readdirSync(join(repoRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
].filter((f) => existsSync(join(repoRoot, f)));

/** Link targets: Markdown links and images, and HTML src/href attributes. Code spans and blocks are skipped. */
function linksOf(markdown: string): string[] {
  const text = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const links = [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
  const attributes = [...text.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  return [...links, ...attributes];
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(markdown: string): Set<string> {
  const text = markdown.replace(/```[\s\S]*?```/g, '');
  return new Set(
    [...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) =>
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    ),
  );
}

const external = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);

describe('documents', () => {
  it('finds the documents it checks', () => {
    expect(documents).toEqual(expect.arrayContaining(['README.md', 'docs/rules.md', 'docs/http-api.md', 'docs/design.md', 'docs/costs.md']));
  });

  for (const doc of documents) {
    it(`${doc}: every relative link names a file of the repository`, () => {
      const text = readFileSync(join(repoRoot, doc), 'utf8');
      const broken: string[] = [];
      for (const target of linksOf(text)) {
        if (external(target)) continue;
        const [path, fragment] = target.split('#') as [string, string | undefined];
        const file = path === '' ? join(repoRoot, doc) : resolve(dirname(join(repoRoot, doc)), decodeURI(path));
        const inRepo = relative(repoRoot, file);
        if (inRepo.startsWith('..')) {
          broken.push(`${target} (outside the repository)`);
          continue;
        }
        if (!existsSync(file)) {
          broken.push(`${target} (no such file)`);
          continue;
        }
        if (fragment && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(fragment)) broken.push(`${target} (no such heading)`);
      }
      expect(broken).toEqual([]);
    });
  }

  it('they cite rule ids, never tracker issue numbers', () => {
    const citing = documents.filter((doc) => /(^|[\s(])#\d+\b/m.test(readFileSync(join(repoRoot, doc), 'utf8').replace(/```[\s\S]*?```/g, '')));
    expect(citing).toEqual([]);
  });

  it('nothing points at files outside the repository', () => {
    const outside = documents.filter((doc) => /\.\.\/shared\b|\/work\/shared/.test(readFileSync(join(repoRoot, doc), 'utf8')));
    expect(outside).toEqual([]);
  });
});
