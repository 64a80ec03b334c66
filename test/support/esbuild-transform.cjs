// Jest transform: TypeScript and ESM-only dependencies (middy, zod) to CommonJS with esbuild.
// Type checking is `tsc --noEmit` in `npm test`; this only strips types, so it stays fast.
const { transformSync } = require('esbuild');

module.exports = {
  process(source, filename) {
    const { code, map } = transformSync(source, {
      loader: filename.endsWith('.ts') ? 'ts' : 'js',
      format: 'cjs',
      target: 'node20',
      sourcemap: 'both',
      sourcefile: filename,
    });
    return { code, map };
  },
};
