/**
 * The demo page's voice paragraph (issue 36.4): the call button shows only with the widget's
 * `voice_enabled`, so the page names that step; without a speech model it names REALTIME_API_KEY,
 * what the README tells OpenAI users to set, before REALTIME_BASE_URL.
 */
import { demoPage } from '../../../shared/local/demo';

const voiceParagraph = (html: string) => /<p id="voice">(.*?)<\/p>/s.exec(html)?.[1] ?? '';

describe('the demo page', () => {
  const saved = { key: process.env.REALTIME_API_KEY, base: process.env.REALTIME_BASE_URL };
  afterEach(() => {
    for (const [name, value] of [['REALTIME_API_KEY', saved.key], ['REALTIME_BASE_URL', saved.base]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('without a speech model: both steps, REALTIME_API_KEY first, then voice_enabled', () => {
    delete process.env.REALTIME_API_KEY;
    delete process.env.REALTIME_BASE_URL;
    const text = voiceParagraph(demoPage('w1'));
    expect(text).toMatch(/REALTIME_API_KEY=sk-… npm start.*REALTIME_BASE_URL.*voice_enabled.*PATCH \/api\/v1\/widget-settings\/\{id\}/s);
  });

  it('with a speech model: the phone icon, and that it shows only while voice_enabled is true', () => {
    process.env.REALTIME_API_KEY = 'sk-test';
    const text = voiceParagraph(demoPage('w1'));
    expect(text).toMatch(/phone icon/);
    expect(text).toMatch(/voice_enabled<\/code> is true/);
  });
});
