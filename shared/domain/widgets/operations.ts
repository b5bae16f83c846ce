import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import { CreateWidgetBody, UpdateWidgetBody, WidgetConfig, WidgetListQuery, WidgetSettings } from './schemas';

const tag = 'Widget settings';

export const createWidgetSettings = defineOperation({
  method: 'POST', path: '/api/v1/widget-settings', operationId: 'createWidgetSettings', tag, auth: true,
  summary: 'Create widget settings (`name` required; see docs/api.md for defaults)',
  entry: 'functions/widget-settings/create.ts', body: CreateWidgetBody, response: WidgetSettings,
  successMessage: 'Widget settings created successfully', access: { table: 'RW' },
});

export const listWidgetSettings = defineOperation({
  method: 'GET', path: '/api/v1/widget-settings', operationId: 'listWidgetSettings', tag, auth: true,
  summary: 'List the organization\'s widget settings (deactivated ones included)',
  entry: 'functions/widget-settings/list.ts', query: WidgetListQuery, response: WidgetSettings, list: true, access: { table: 'R' },
});

export const getWidgetSettings = defineOperation({
  method: 'GET', path: '/api/v1/widget-settings/{id}', operationId: 'getWidgetSettings', tag, auth: true,
  summary: 'Get widget settings (also once deactivated)', entry: 'functions/widget-settings/get.ts',
  params: IdParams, response: WidgetSettings, access: { table: 'R' },
});

export const updateWidgetSettings = defineOperation({
  method: 'PATCH', path: '/api/v1/widget-settings/{id}', operationId: 'updateWidgetSettings', tag, auth: true,
  summary: 'Update widget settings; only supplied fields change (`is_active: true` reactivates)',
  entry: 'functions/widget-settings/update.ts', params: IdParams, body: UpdateWidgetBody, response: WidgetSettings,
  successMessage: 'Widget settings updated successfully', access: { table: 'RW' },
});

export const deleteWidgetSettings = defineOperation({
  method: 'DELETE', path: '/api/v1/widget-settings/{id}', operationId: 'deleteWidgetSettings', tag, auth: true,
  summary: 'Deactivate widget settings: the agents tied to them are no longer reachable through the widget',
  entry: 'functions/widget-settings/deactivate.ts', params: IdParams,
  successMessage: 'Widget settings deactivated successfully', access: { table: 'RW' },
});

export const getWidgetConfig = defineOperation({
  method: 'GET', path: '/api/v1/widget/{id}/config', operationId: 'getWidgetConfig', tag: 'Widget', auth: false,
  summary: 'Public (no key): what the embeddable widget needs; 404 once deactivated or for an origin not in `allowed_origins`',
  entry: 'functions/widget/config.ts', params: IdParams, response: WidgetConfig, access: { table: 'R' },
});

export const preflightWidgetConfig = defineOperation({
  method: 'OPTIONS', path: '/api/v1/widget/{id}/config', operationId: 'preflightWidgetConfig', tag: 'Widget', auth: false,
  summary: 'Public (no key): CORS preflight of the widget config, under the same origin rule',
  entry: 'functions/widget/preflight.ts', params: IdParams,
  successMessage: 'Preflight accepted', access: { table: 'R' },
});
