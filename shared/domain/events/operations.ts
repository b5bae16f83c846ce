import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import { Event, EventListQuery } from './schemas';

const tag = 'Events';

export const listEvents = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/events', operationId: 'listEvents', tag, auth: true,
  summary: 'The organization\'s events, newest first, kept 30 days; filters `type`, `from`, `to` (creation time)',
  entry: 'functions/events/list.ts', query: EventListQuery, list: true, access: { table: 'R' },
});

export const getEvent = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/events/{id}', operationId: 'getEvent', tag, auth: true,
  summary: 'One event', entry: 'functions/events/get.ts', params: IdParams, access: { table: 'R' },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  listEvents.response = Event;
  getEvent.response = Event;
}
