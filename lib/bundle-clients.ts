import type { Metafile } from 'esbuild';

/**
 * The `@aws-sdk/client-*` packages a bundle uses, from esbuild's metafile: those it holds (code of the package in
 * the output) and those it leaves to the runtime (external imports). The bench reports them and a bundle test
 * checks them against the manifest's permissions (lib/functions.ts `awsClientsOf`).
 */
export function awsClientsInMetafile(metafile: Metafile): string[] {
  const clients = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const held = /node_modules\/(@aws-sdk\/client-[^/]+)\//.exec(input);
      if (held && bytesInOutput > 0) clients.add(held[1]!);
    }
  }
  for (const input of Object.values(metafile.inputs)) {
    for (const imported of input.imports) {
      if (imported.external && /^@aws-sdk\/client-[^/]+$/.test(imported.path)) clients.add(imported.path);
    }
  }
  return [...clients].sort();
}
