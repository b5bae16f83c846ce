import { buildSync } from 'esbuild';
import { join } from 'node:path';

/** The widget's source entry, relative to the repository root. */
export const WIDGET_ENTRY = 'widget/src/main.ts';

/**
 * Bundles the embeddable widget (widget/src) into one self-contained, minified script: an IIFE
 * for the browsers of the last few years (ES2020), no imports, nothing loaded at run time.
 */
export function buildWidgetScript(rootDir = join(__dirname, '..')): { code: string } {
  const result = buildSync({
    absWorkingDir: rootDir,
    entryPoints: [WIDGET_ENTRY],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    minify: true,
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  });
  return { code: result.outputFiles[0]!.text };
}

/** The built script, committed so the stack ships it with its function (`bundleFiles`); a unit test keeps it current. */
export const WIDGET_DIST = 'widget/dist/embed.js';

// `npm run widget:build` writes WIDGET_DIST.
if (require.main === module) {
  const { mkdirSync, writeFileSync } = require('node:fs') as typeof import('node:fs');
  const target = join(__dirname, '..', WIDGET_DIST);
  mkdirSync(join(target, '..'), { recursive: true });
  const { code } = buildWidgetScript();
  writeFileSync(target, code);
  console.log(`${WIDGET_DIST}: ${code.length} bytes`);
}
