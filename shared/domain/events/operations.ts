import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import { Event, EventListQuery } from './schemas';

const tag = 'Events';

export const listEvents = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/events', operationId: 'listEvents', tag, auth: true,
  summary: 'The organization\'s events, newest first, kept 30 days; filters `type`, `from`, `to` (creation time)',
  entry: 'functions/events/list.ts', query: EventListQuery, response: Event, list: true, access: { table: 'R' },
});

export const getEvent = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/events/{id}', operationId: 'getEvent', tag, auth: true,
  summary: 'One event', entry: 'functions/events/get.ts', params: IdParams, response: Event, access: { table: 'R' },
});
