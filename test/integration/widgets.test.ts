import { v7 as uuidv7 } from 'uuid';
import { createAgent, updateAgent } from '../../shared/domain/agents/service';
import { CreateWidgetBody, UpdateWidgetBody } from '../../shared/domain/widgets/schemas';
import {
  createWidgetSettings,
  deactivateWidgetSettings,
  getWidgetSettings,
  listWidgetSettings,
  updateWidgetSettings,
} from '../../shared/domain/widgets/service';
import { getPublicWidgetConfig, OriginNotAllowedError, preflightWidgetConfig } from '../../shared/domain/widgets/public-config';
import { fieldIssues } from '../../shared/http/middleware/validate';
import { NotFoundError, ValidationError } from '../../shared/errors';
import { handler as configHandler } from '../../functions/widget/config';
import { handler as preflightHandler } from '../../functions/widget/preflight';
import { logger } from '../../shared/logger';
import { keys } from '../../shared/db/keys';
import { transact, updateExisting } from '../../shared/db/store';
import { apiEvent, lambdaContext, parsed } from '../support/events';
import { rejection } from '../support/rejection';
import { asFunction } from '../support/access';

// The public handlers write access logs; keep the test output quiet.
logger.setLogLevel('SILENT');

const create = (orgId: string, input: Record<string, unknown> = {}) => createWidgetSettings(orgId, CreateWidgetBody.parse({ name: 'Website', ...input }));

function invalidPaths(schema: typeof CreateWidgetBody | typeof UpdateWidgetBody, input: unknown): string[] {
  const result = schema.safeParse(input);
  return result.success ? [] : fieldIssues(result.error, 'body').map((i) => i.path);
}


const configEvent = (id: string, method: 'GET' | 'OPTIONS', headers: Record<string, string> = {}) =>
  apiEvent({ method, path: `/api/v1/widget/${id}/config`, pathParameters: { id }, headers });

describe('widget settings', () => {
  it('creates with defaults and reads it back', async () => {
    const org = uuidv7();
    const widget = await create(org, { primary_color: '#AA00ff', allowed_origins: ['https://Example.com'] });
    expect(widget).toMatchObject({
      organization_id: org,
      name: 'Website',
      is_active: true,
      title: 'Chat with us',
      position: 'bottom-right',
      avatar_url: '',
      language: 'en',
      primary_color: '#AA00ff',
      allowed_origins: ['https://example.com'],
    });
    expect(await getWidgetSettings(org, widget.id)).toEqual(widget);
  });

  it('reads settings stored before public_variables and daily_message_limit existed with their defaults', async () => {
    const org = uuidv7();
    const widget = await create(org);
    await transact([updateExisting(keys.widget(org, widget.id), {}, { remove: ['public_variables', 'daily_message_limit'] })]);
    expect(await getWidgetSettings(org, widget.id)).toMatchObject({ public_variables: [], daily_message_limit: 2000 });
  });

  it('validates public_variables: names only, no built-in or contact.* name, at most 20, no repeat', () => {
    expect(invalidPaths(CreateWidgetBody, { name: 'W', public_variables: ['plan', 'page.url', 'utm_source'], daily_message_limit: 0 })).toEqual([]);
    expect(invalidPaths(CreateWidgetBody, { name: 'W', public_variables: ['plan', 'agent_name', 'has space', 'contact.email', 'timezone', 'current_time_local', 'current_time'] })).toEqual([
      'public_variables.1', 'public_variables.2', 'public_variables.3', 'public_variables.4', 'public_variables.5', 'public_variables.6',
    ]);
    expect(invalidPaths(UpdateWidgetBody, { public_variables: ['plan', 'plan'] })).toEqual(['public_variables']);
    expect(invalidPaths(UpdateWidgetBody, { daily_message_limit: -1 })).toEqual(['daily_message_limit']);
  });

  it('lists with an exact total, by offset and by cursor', async () => {
    const org = uuidv7();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create(org, { name: `W${i}` })).id);
    const first = await listWidgetSettings(org, { limit: 2, offset: 0 });
    const byOffset = await listWidgetSettings(org, { limit: 2, offset: 2 });
    const byCursor = await listWidgetSettings(org, { limit: 2, cursor: first.meta.next_cursor! });
    expect(first.meta).toMatchObject({ total: 3, limit: 2, offset: 0 });
    expect(first.items.map((w) => w.id)).toEqual(ids.slice(0, 2));
    expect(byOffset.items.map((w) => w.id)).toEqual([ids[2]]);
    expect(byCursor.items.map((w) => w.id)).toEqual([ids[2]]);
    expect(byCursor.meta.next_cursor).toBeNull();
  });

  it('patches only the supplied fields, concurrently without losing any', async () => {
    const org = uuidv7();
    const widget = await create(org, { greeting: 'Hello' });
    await Promise.all([
      updateWidgetSettings(org, widget.id, { title: 'Support' }),
      updateWidgetSettings(org, widget.id, { position: 'bottom-left' }),
      updateWidgetSettings(org, widget.id, UpdateWidgetBody.parse({ allowed_origins: ['http://localhost:3000'] })),
    ]);
    expect(await getWidgetSettings(org, widget.id)).toMatchObject({
      name: 'Website',
      greeting: 'Hello',
      title: 'Support',
      position: 'bottom-left',
      allowed_origins: ['http://localhost:3000'],
    });
    expect(await rejection(updateWidgetSettings(org, widget.id, {}))).toBeInstanceOf(ValidationError);
  });

  it('validates fields', () => {
    expect(invalidPaths(CreateWidgetBody, {})).toEqual(['name']);
    expect(invalidPaths(CreateWidgetBody, { name: ' ' })).toEqual(['name']);
    expect(invalidPaths(CreateWidgetBody, { name: 'W', primary_color: 'red', position: 'top', language: 'english!', avatar_url: 'ftp://x.com/a.png' })).toEqual([
      'primary_color',
      'position',
      'avatar_url',
      'language',
    ]);
    expect(invalidPaths(CreateWidgetBody, { name: 'W', allowed_origins: ['https://example.com/path', 'https://ok.example.com', 'example.com', 'https://example.com/'] })).toEqual([
      'allowed_origins.0',
      'allowed_origins.2',
      'allowed_origins.3',
    ]);
    expect(invalidPaths(CreateWidgetBody, { name: 'W', extra: true })).toEqual(['extra']);
    expect(invalidPaths(CreateWidgetBody, { name: 'W', avatar_url: '', language: 'en-US', allowed_origins: ['http://localhost:8080'] })).toEqual([]);
  });

  it('deactivates on delete, stays readable, and deleting again still succeeds', async () => {
    const org = uuidv7();
    const widget = await create(org);
    await deactivateWidgetSettings(org, widget.id);
    const once = await getWidgetSettings(org, widget.id);
    await deactivateWidgetSettings(org, widget.id);
    const twice = await getWidgetSettings(org, widget.id);
    expect(once.is_active).toBe(false);
    expect(twice).toEqual(once);
    expect((await listWidgetSettings(org, { limit: 10 })).meta.total).toBe(1);
  });

  it('answers 404 for another organization\'s widget settings', async () => {
    const [owner, other] = [uuidv7(), uuidv7()];
    const widget = await create(owner);
    for (const attempt of [getWidgetSettings(other, widget.id), updateWidgetSettings(other, widget.id, { title: 'x' }), deactivateWidgetSettings(other, widget.id)]) {
      expect(await rejection(attempt)).toBeInstanceOf(NotFoundError);
    }
    expect((await getWidgetSettings(owner, widget.id)).is_active).toBe(true);
    expect((await listWidgetSettings(other, { limit: 10 })).meta.total).toBe(0);
  });
});

describe('public widget config', () => {
  it('returns the appearance and the first active agent tied to the widget', async () => {
    // Prepare
    const org = uuidv7();
    const widget = await create(org, { title: 'Help', greeting: 'Hi', language: 'de-DE' });
    await createAgent(org, { name: 'Inactive', widget_settings_id: widget.id, status: 'AGENT_STATUS_INACTIVE' });
    const active = await createAgent(org, { name: 'Active', agent_name: 'Ava', begin_message: 'Hello!', widget_settings_id: widget.id });
    await createAgent(org, { name: 'Later', widget_settings_id: widget.id });
    await createAgent(org, { name: 'Elsewhere' });
    // Act
    const { config, headers } = await getPublicWidgetConfig(widget.id, undefined);
    // Assess
    expect(config).toEqual({
      id: widget.id,
      title: 'Help',
      greeting: 'Hi',
      placeholder: widget.placeholder,
      primary_color: widget.primary_color,
      position: 'bottom-right',
      avatar_url: '',
      language: 'de-DE',
      voice_enabled: false,
      stream_base_url: null,
      agent: { id: active.id, agent_name: 'Ava', begin_message: 'Hello!', start_speaker: 'agent' },
    });
    expect(headers).toEqual({ 'access-control-allow-origin': '*', vary: 'Origin', 'cache-control': 'public, max-age=60' });
  });

  it('tells the script where its turns stream when the stack has a streaming API (STREAMING_API_URL)', async () => {
    const org = uuidv7();
    const widget = await create(org);
    process.env.STREAMING_API_URL = 'https://abc123.execute-api.eu-west-1.amazonaws.com/v1/';
    try {
      expect((await getPublicWidgetConfig(widget.id, undefined)).config.stream_base_url).toBe('https://abc123.execute-api.eu-west-1.amazonaws.com/v1/api/v1');
    } finally {
      delete process.env.STREAMING_API_URL;
    }
    expect((await getPublicWidgetConfig(widget.id, undefined)).config.stream_base_url).toBeNull();
  });

  it('has agent null when no active agent is tied to the widget', async () => {
    const org = uuidv7();
    const widget = await create(org);
    const agent = await createAgent(org, { name: 'Tied', widget_settings_id: widget.id });
    await updateAgent(org, agent.id, { status: 'AGENT_STATUS_INACTIVE' });
    expect((await getPublicWidgetConfig(widget.id, undefined)).config.agent).toBeNull();
  });

  it('is 404 for an unknown widget and once deactivated, and back after reactivation', async () => {
    const org = uuidv7();
    const widget = await create(org);
    expect(await rejection(getPublicWidgetConfig(uuidv7(), undefined))).toBeInstanceOf(NotFoundError);
    await deactivateWidgetSettings(org, widget.id);
    const closed = await rejection(getPublicWidgetConfig(widget.id, undefined));
    expect(closed).toBeInstanceOf(NotFoundError);
    expect(closed.details).toMatchObject({ reason: 'widget_inactive' });
    // The preflight still answers, so the page's request goes and reads that 404 (CORS headers set).
    expect(await preflightWidgetConfig(widget.id, undefined)).toMatchObject({ 'access-control-allow-origin': '*' });
    expect(await rejection(preflightWidgetConfig(uuidv7(), undefined))).toBeInstanceOf(NotFoundError);
    await updateWidgetSettings(org, widget.id, { is_active: true });
    expect((await getPublicWidgetConfig(widget.id, undefined)).config.id).toBe(widget.id);
  });

  it('honours allowed_origins', async () => {
    const org = uuidv7();
    const open = await create(org);
    const closed = await create(org, { allowed_origins: ['https://shop.example.com', 'http://localhost:3000'] });
    expect((await getPublicWidgetConfig(open.id, 'https://anything.test')).headers['access-control-allow-origin']).toBe('https://anything.test');
    expect((await getPublicWidgetConfig(closed.id, 'https://shop.example.com')).headers['access-control-allow-origin']).toBe('https://shop.example.com');
    expect((await getPublicWidgetConfig(closed.id, undefined)).headers['access-control-allow-origin']).toBe('*');
    const refused = await rejection(getPublicWidgetConfig(closed.id, 'https://evil.test'));
    expect(refused).toBeInstanceOf(OriginNotAllowedError);
    expect(refused.statusCode).toBe(404);
    expect(refused.message).toBe(`Widget ${closed.id} is not enabled for origin https://evil.test`);
    expect(await rejection(preflightWidgetConfig(closed.id, 'https://evil.test'))).toBeInstanceOf(OriginNotAllowedError);
  });

  it('answers through the public handlers with CORS headers, and refuses other origins without them', async () => {
    // Prepare
    const org = uuidv7();
    const widget = await create(org, { allowed_origins: ['https://shop.example.com'] });
    // Act
    const ok = parsed(await asFunction('getWidgetConfig', () => configHandler(configEvent(widget.id, 'GET', { origin: 'https://shop.example.com' }), lambdaContext)));
    const refused = parsed(await asFunction('getWidgetConfig', () => configHandler(configEvent(widget.id, 'GET', { origin: 'https://evil.test' }), lambdaContext)));
    const preflight = parsed(await asFunction('preflightWidgetConfig', () => preflightHandler(configEvent(widget.id, 'OPTIONS', { origin: 'https://shop.example.com' }), lambdaContext)));
    const badId = parsed(await asFunction('getWidgetConfig', () => configHandler(configEvent('not-a-uuid', 'GET'), lambdaContext)));
    // Assess
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ success: true, data: { id: widget.id, agent: null } });
    expect(ok.headers).toMatchObject({ 'access-control-allow-origin': 'https://shop.example.com', vary: 'Origin', 'cache-control': 'public, max-age=60' });
    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe('NOT_FOUND');
    expect(refused.body.message).toContain('not enabled for origin https://evil.test');
    expect(Object.keys(refused.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    expect(preflight.status).toBe(200);
    expect(preflight.headers).toMatchObject({
      'access-control-allow-origin': 'https://shop.example.com',
      'access-control-allow-methods': 'GET, OPTIONS',
      'access-control-allow-headers': 'authorization, content-type',
      'access-control-max-age': '600',
      vary: 'Origin',
    });
    expect(badId.status).toBe(400);
  });
});
