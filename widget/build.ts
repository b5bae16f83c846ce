import { buildSync } from 'esbuild';
import { join } from 'node:path';

/** The widget's source entry, relative to the repository root. */
export const WIDGET_ENTRY = 'widget/src/main.ts';
/** The function that serves the script: the stack's bundler writes `embed.js` beside its code. */
export const WIDGET_SCRIPT_FUNCTION_ENTRY = 'functions/widget/embed.ts';

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
