/**
 * Logged stacks in TypeScript positions without `--enable-source-maps`. With that flag Node reads, parses and
 * indexes the bundle's source map while it compiles the bundle, on every cold start; an error is logged far more
 * rarely than a function starts. Here a frame of a bundled file is mapped only when an error is logged: the
 * `.map` beside the file (the stack ships it, lib/functions.ts BUNDLING) is read and parsed once, on the first
 * error, and kept. Frames of other files, and every frame when the map cannot be had, are left as they are.
 */
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';

/** `    at name (/abs/file.js:12:34)` or `    at /abs/file.js:12:34`. */
const FRAME = /^(\s*at (?:.*? \()?)(\/[^()]+?\.js):(\d+):(\d+)(\)?)$/;

export type ReadFile = (path: string) => string;

/** A stack mapper with its own cache of source maps (one per bundled file; null: the file has none). */
export function stackMapper(read: ReadFile = (path) => readFileSync(path, 'utf8')) {
  const maps = new Map<string, SourceMap | null>();
  const mapOf = (file: string): SourceMap | null => {
    let map = maps.get(file);
    if (map === undefined) {
      try {
        map = new SourceMap(JSON.parse(read(`${file}.map`)) as ConstructorParameters<typeof SourceMap>[0]);
      } catch {
        map = null;
      }
      maps.set(file, map);
    }
    return map;
  };
  const mapFrame = (line: string): string => {
    const frame = FRAME.exec(line);
    if (!frame) return line;
    const [, head, file, generatedLine, generatedColumn, tail] = frame;
    const map = mapOf(file!);
    // findEntry is zero-based; a stack's positions count from 1.
    const entry = map?.findEntry(Number(generatedLine) - 1, Number(generatedColumn) - 1) as
      { originalSource?: string; originalLine?: number; originalColumn?: number } | undefined;
    if (!entry?.originalSource || entry.originalLine === undefined || entry.originalColumn === undefined) {
      return line;
    }
    // The map names sources relative to the bundle's build directory: `../../functions/core/send.ts`.
    const source = entry.originalSource.replace(/^(?:file:\/\/)?(?:\.\.\/)+/, '');
    return `${head}${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}${tail}`;
  };
  return (stack: string | undefined): string | undefined => {
    if (!stack) return stack;
    try {
      return stack.split('\n').map(mapFrame).join('\n');
    } catch {
      return stack;
    }
  };
}

/** The container's mapper: the logger maps each logged error's stack with it. */
export const mapStack = stackMapper();
