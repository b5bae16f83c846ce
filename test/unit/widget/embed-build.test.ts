import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { buildWidgetScript, WIDGET_DIST } from '../../../widget/build';

describe('the embeddable widget script', () => {
  const built = buildWidgetScript().code;

  it('is committed as built from widget/src (run `npm run widget:build`)', () => {
    expect(readFileSync(join(__dirname, '..', '..', '..', WIDGET_DIST), 'utf8')).toBe(built);
  });

  it('stays within its budget: 15 KB gzipped, and loads nothing but the API', () => {
    expect(gzipSync(built, { level: 9 }).length).toBeLessThanOrEqual(15 * 1024);
    // No import, no other script, stylesheet, font or frame: the only requests are fetch() to the API.
    expect(built).not.toMatch(/\bimport\s*\(|importScripts|@import|<script|<link|<iframe|XMLHttpRequest/);
  });
});
