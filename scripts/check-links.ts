/**
 * `npx tsx scripts/check-links.ts`: checks every relative link of README.md, CONTRIBUTING.md, docs/*.md and the
 * decision records (docs/adr/*.md). A link is broken when
 * its file does not exist, or when its `#anchor` names no heading of the target Markdown file (GitHub's anchors:
 * the heading's text lower-cased, punctuation dropped, spaces as hyphens, `-1`, `-2`... for repeats). Links inside
 * code blocks and code spans are not links; absolute URLs (`https:`, `mailto:`...) are not checked. Prints the
 * broken links and exits 1 when there is any. test/unit/doc-links.test.ts runs the same function.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

export const REPO_ROOT = resolve(__dirname, '..');

export interface BrokenLink {
  /** The Markdown file holding the link, relative to the repository root. */
  file: string;
  line: number;
  target: string;
  reason: string;
}

/** README.md, CONTRIBUTING.md, every docs/*.md and docs/adr/*.md, relative to the root. */
export function markdownFiles(root: string = REPO_ROOT): string[] {
  const pages = (folder: string) =>
    existsSync(join(root, folder))
      ? readdirSync(join(root, folder))
          .filter((name) => name.endsWith('.md'))
          .sort()
          .map((name) => `${folder}/${name}`)
      : [];
  return ['README.md', 'CONTRIBUTING.md', ...pages('docs'), ...pages('docs/adr')];
}

/** The lines of a Markdown text with fenced code blocks blanked (kept as empty lines, so numbers stay right). */
function withoutFences(text: string): string[] {
  const lines = text.split('\n');
  let fence: string | undefined;
  return lines.map((line) => {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined) {
      if (marker !== undefined) {
        fence = marker;
        return '';
      }
      return line;
    }
    if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
    return '';
  });
}

/** Code spans replaced by spaces of the same length (a link's text may span lines; code spans rarely do). */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)[^`]*?\1/g, (span) => ' '.repeat(span.length));
}

/** GitHub's anchor for a heading's Markdown text. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .replace(/`/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor a Markdown file defines: its ATX headings' slugs (repeats numbered) and HTML `id`/`name`s. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(text)) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = githubSlug(heading);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const match of line.matchAll(/<a\s[^>]*\b(?:id|name)=["']([^"']+)["']/gi)) {
      if (match[1] !== undefined) anchors.add(match[1]);
    }
  }
  return anchors;
}

interface Link {
  line: number;
  target: string;
}

/** The inline links, images and reference definitions of a Markdown text, outside code. */
export function linksOf(text: string): Link[] {
  const prose = withoutCodeSpans(withoutFences(text).join('\n'));
  const lineAt = (index: number): number => prose.slice(0, index).split('\n').length;
  const links: Link[] = [];
  // [text](target) or ![alt](target), the text possibly over several lines, the target with an optional title.
  for (const match of prose.matchAll(
    /!?\[(?:[^\][]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g,
  )) {
    if (match[1] !== undefined) links.push({ line: lineAt(match.index), target: match[1] });
  }
  // [label]: target
  for (const match of prose.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$/gm)) {
    if (match[1] !== undefined) links.push({ line: lineAt(match.index), target: match[1] });
  }
  return links.sort((a, b) => a.line - b.line);
}

const isExternal = (target: string): boolean =>
  /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');

/** The broken relative links of the files markdownFiles lists (an empty list when all resolve). */
export function findBrokenLinks(
  root: string = REPO_ROOT,
  files: string[] = markdownFiles(root),
): BrokenLink[] {
  const anchorCache = new Map<string, Set<string>>();
  const anchorsIn = (path: string): Set<string> => {
    let anchors = anchorCache.get(path);
    if (anchors === undefined) {
      anchors = anchorsOf(readFileSync(path, 'utf8'));
      anchorCache.set(path, anchors);
    }
    return anchors;
  };
  const broken: BrokenLink[] = [];
  for (const file of files) {
    const source = join(root, file);
    for (const { line, target } of linksOf(readFileSync(source, 'utf8'))) {
      if (target === '' || isExternal(target)) continue;
      const hashAt = target.indexOf('#');
      const pathPart = (hashAt === -1 ? target : target.slice(0, hashAt)).replace(/\?.*$/, '');
      const anchor = hashAt === -1 ? undefined : decodeURIComponent(target.slice(hashAt + 1));
      const resolved = pathPart === '' ? source : resolve(dirname(source), decodeURIComponent(pathPart));
      const report = (reason: string): void => {
        broken.push({ file, line, target, reason });
      };
      if (resolved !== root && !resolved.startsWith(root + sep)) {
        report(`outside the repository: ${relative(root, resolved)}`);
        continue;
      }
      if (!existsSync(resolved)) {
        report(`no such file: ${relative(root, resolved)}`);
        continue;
      }
      if (anchor === undefined || anchor === '') continue;
      if (statSync(resolved).isDirectory() || !resolved.endsWith('.md')) {
        report(`an anchor on a file that is not Markdown: ${relative(root, resolved)}`);
        continue;
      }
      if (!anchorsIn(resolved).has(anchor))
        report(`no heading for #${anchor} in ${relative(root, resolved)}`);
    }
  }
  return broken;
}

if (require.main === module) {
  const broken = findBrokenLinks();
  const files = markdownFiles();
  if (broken.length === 0) {
    process.stdout.write(`all relative links resolve (${files.length} files)\n`);
  } else {
    for (const link of broken)
      process.stdout.write(`${link.file}:${link.line}: ${link.target}: ${link.reason}\n`);
    process.stdout.write(`${broken.length} broken link(s)\n`);
    process.exitCode = 1;
  }
}
