/**
 * Every key string of the table is built here and nowhere else. Tenant data always lives
 * under `ORG#<orgId>`, so a query can only ever reach the caller's own organization.
 * docs/data-model.md lists every access pattern built from these keys; a unit test pins it.
 */
import { RATE_COUNTER_KEY_PREFIX } from '../access/declaration';

export type Key = { pk: string; sk: string };

const org = (orgId: string) => `ORG#${orgId}`;

/**
 * The leading characters of every rate-limit counter's partition key (the only request-path write
 * outside an organization): the prefix the access grant for them names (../access/declaration.ts).
 */
export const RATE_PREFIX = RATE_COUNTER_KEY_PREFIX;

/** Entity prefixes of sort keys inside an organization's partition. */
export const Prefix = {
  agent: 'AGENT#',
  tool: 'TOOL#',
  widget: 'WIDGET#',
  knowledgeBase: 'KB#',
  kbDocument: 'KBDOC#',
  kbUpload: 'KBUPLOAD#',
  apiKey: 'APIKEY#',
  idempotency: 'IDEM#',
  counter: 'COUNT#',
  phoneNumber: 'PHONE#',
  charge: 'CHARGE#',
  contact: 'CONTACT#',
  contactSearch: 'CSEARCH#',
  appointment: 'APPT#',
  call: 'CALL#',
  callIndex: 'CALLIDX#',
  dnc: 'DNC#',
  campaign: 'CAMPAIGN#',
  campaignContact: 'CC#',
  webhook: 'WEBHOOK#',
  event: 'EVENT#',
  chat: 'CHAT#',
  concurrencySlot: 'SLOT#',
  callWaiting: 'CALLWAIT#',
} as const;

export const keys = {
  /** The organization record. */
  organization: (orgId: string): Key => ({ pk: org(orgId), sk: 'ORG' }),
  /** The admin directory of organizations: one fixed partition, read only by the admin command. */
  organizationDirectory: (orgId: string): Key => ({ pk: 'DIRECTORY#ORGS', sk: org(orgId) }),
  directoryPartition: 'DIRECTORY#ORGS',
  /** An exact count of one collection (optionally one status within it). */
  counter: (orgId: string, collection: string): Key => ({ pk: org(orgId), sk: `${Prefix.counter}${collection}` }),
  /**
   * The organization's concurrency counter (shared/domain/concurrency): live calls in total and by
   * kind, the organization's own `limit` and the operator's `ceiling`; moved only in the
   * transactions that put or delete a slot, so it always equals the number of slots.
   */
  concurrency: (orgId: string): Key => ({ pk: org(orgId), sk: 'CONCURRENCY' }),
  /** One live call's concurrency slot: put with the call, deleted with its end. */
  concurrencySlot: (orgId: string, callId: string): Key => ({ pk: org(orgId), sk: `${Prefix.concurrencySlot}${callId}` }),
  /** A call waiting for a slot (`"queue": true`): the organization's FIFO, in id (creation) order; deleted when it is placed or ends. */
  callWaiting: (orgId: string, callId: string): Key => ({ pk: org(orgId), sk: `${Prefix.callWaiting}${callId}` }),
  /** An API key's record inside its organization (name, prefix, dates; never the secret). */
  apiKey: (orgId: string, keyId: string): Key => ({ pk: org(orgId), sk: `${Prefix.apiKey}${keyId}` }),
  /** The global lookup of a key by the SHA-256 of its secret: the one item authentication reads. */
  apiKeyByHash: (hash: string): Key => ({ pk: `KEYHASH#${hash}`, sk: 'KEYHASH' }),
  /**
   * One API key's request count in one rate-limit window (whole minutes since the epoch). Outside
   * the organization's partition on purpose: every function may write `RATE#*` keys and nothing
   * else from the request path (an IAM leading-keys condition), and a new window is a new
   * partition, so one hot key never concentrates on a single partition for long. Expires via `ttl`.
   */
  rateCounter: (keyId: string, window: number): Key => ({ pk: `${RATE_PREFIX}${keyId}#${window}`, sk: 'RATE' }),
  /**
   * The web widget's abuse limits (shared/domain/widgets/abuse-limits.ts): chats started through one
   * widget, chats started by one client address on one widget, and messages of one widget chat, each
   * in one window (whole minutes since the epoch). Outside the organization's partition, like the
   * per-key counters (the public endpoints know no organization before they read the widget); they
   * expire via `ttl`.
   */
  widgetChatStarts: (widgetId: string, window: number): Key => ({ pk: `${RATE_PREFIX}WIDGET#${widgetId}#${window}`, sk: 'CHATS' }),
  widgetClientChatStarts: (widgetId: string, address: string, window: number): Key => ({ pk: `${RATE_PREFIX}WIDGET#${widgetId}#IP#${address}#${window}`, sk: 'CHATS' }),
  widgetChatMessages: (chatId: string, window: number): Key => ({ pk: `${RATE_PREFIX}CHAT#${chatId}#${window}`, sk: 'MESSAGES' }),
  /** Visitor messages through one widget in one UTC day (`YYYY-MM-DD`): its `daily_message_limit`. */
  widgetDailyMessages: (widgetId: string, day: string): Key => ({ pk: `${RATE_PREFIX}WIDGET#${widgetId}#DAY#${day}`, sk: 'MESSAGES' }),
  agent: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.agent}${id}` }),
  /**
   * An agent's own partition: its published versions, its tests, its test runs and their results,
   * deleted with the agent (shared/domain/agents/versions.ts, shared/domain/agent-tests/).
   */
  agentPartition: (orgId: string, agentId: string) => `${org(orgId)}#AGENT#${agentId}`,
  /** The tombstone of a deleted agent, written with the agent's deletion and removed when the agent-cleanup job has emptied its partition. */
  agentDeletion: (orgId: string, agentId: string): Key => ({ pk: org(orgId), sk: `AGENTDELETION#${agentId}` }),
  /** A published version of an agent (immutable): `VER#<version, 10 digits>`, so newest first is a descending query. */
  agentVersion: (orgId: string, agentId: string, version: number): Key => ({ pk: `${org(orgId)}#AGENT#${agentId}`, sk: `VER#${String(version).padStart(10, '0')}` }),
  agentVersionPrefix: 'VER#',
  /** A test of an agent (a scripted or simulated user and its criteria). */
  agentTest: (orgId: string, agentId: string, testId: string): Key => ({ pk: `${org(orgId)}#AGENT#${agentId}`, sk: `TEST#${testId}` }),
  agentTestPrefix: 'TEST#',
  /** A test run of an agent (UUID v7 ids: newest first is a descending query). */
  agentTestRun: (orgId: string, agentId: string, runId: string): Key => ({ pk: `${org(orgId)}#AGENT#${agentId}`, sk: `RUN#${runId}` }),
  agentTestRunPrefix: 'RUN#',
  /** One result of a run (a test × an attempt), written once by its queue job: `RESULT#<run>#<test>#<attempt>`. */
  agentTestResult: (orgId: string, agentId: string, runId: string, testAttempt: `${string}#${number}`): Key => ({
    pk: `${org(orgId)}#AGENT#${agentId}`,
    sk: `RESULT#${runId}#${testAttempt}`,
  }),
  agentTestResultPrefix: (runId: string) => `RESULT#${runId}#`,
  /** A run's frozen copy of one of its tests, written when the run starts: `RUNTEST#<run>#<test>` (edits and deletions of the test do not reach the run). */
  agentTestRunTest: (orgId: string, agentId: string, runId: string, testId: string): Key => ({ pk: `${org(orgId)}#AGENT#${agentId}`, sk: `RUNTEST#${runId}#${testId}` }),
  tool: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.tool}${id}` }),
  widget: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.widget}${id}` }),
  knowledgeBase: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.knowledgeBase}${id}` }),
  /** A knowledge-base document; `doc_id` is unique per organization (GET /rag/document names only org and doc). */
  kbDocument: (orgId: string, docId: string): Key => ({ pk: org(orgId), sk: `${Prefix.kbDocument}${docId}` }),
  /** A file upload handed out by POST /rag/uploads (expires through `ttl`). */
  kbUpload: (orgId: string, uploadId: string): Key => ({ pk: org(orgId), sk: `${Prefix.kbUpload}${uploadId}` }),
  /** A stored answer to a POST sent with an Idempotency-Key. */
  idempotency: (orgId: string, operationId: string, idempotencyKey: string): Key => ({
    pk: org(orgId),
    sk: `${Prefix.idempotency}${operationId}#${idempotencyKey}`,
  }),
  /** The partition of one organization, for collection queries. */
  partition: org,
  /** A phone number the organization holds or held (bought or imported). */
  phoneNumber: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.phoneNumber}${id}` }),
  /**
   * The one global claim of an E.164 number: who holds it (organization, number id). Put with
   * attribute_not_exists in the same transaction as the organization's number item, deleted
   * on release, so a number is held by at most one organization at a time; inbound calls find
   * the organization and number from the dialed number through it.
   */
  numberClaim: (e164: string): Key => ({ pk: `NUMBER#${e164}`, sk: 'NUMBER' }),
  /**
   * The one session of a carrier's incoming call (Twilio: its CallSid), put with attribute_not_exists
   * in the session's transaction: a repeated incoming-call webhook finds the session it made.
   */
  inboundCall: (provider: string, providerCallId: string): Key => ({ pk: `INBOUND#${provider}#${providerCallId}`, sk: 'INBOUND' }),
  /**
   * A minute sweep's "next due" marker (shared/db/sweep-marker.ts): no entry of its index is due
   * before `next_due_at`, so an idle minute costs this one GetItem.
   */
  sweepMarker: (sweep: string): Key => ({ pk: `SWEEP#${sweep}`, sk: 'NEXT' }),
  /**
   * The one stream a voice-stream token admits (`<sha256 of the token>`), put with attribute_not_exists
   * at admission: a second stream with the same token is refused, whichever runtime task it reaches.
   */
  voiceStreamToken: (tokenHash: string): Key => ({ pk: `VOICESTREAM#${tokenHash}`, sk: 'VOICESTREAM' }),
  /**
   * A ConversationRelay connection by API Gateway's connection id (all a relay message names): the
   * call it carries, the agent's settings read at connect, and the relay's conversation so far.
   * Outside the organization's partition like the stream token marker: only the relay's functions
   * read it, by an id API Gateway made; it expires through `ttl`.
   */
  relayConnection: (connectionId: string): Key => ({ pk: `RELAY#${connectionId}`, sk: 'RELAY' }),
  /**
   * A relay connection's entry in the calls-due index (gsi2), an item of its own beside the
   * connection's state so the state's every write does not rewrite an index copy: the recovery
   * sweep finds a connection whose `$disconnect` never came through it (relay/recovery.ts).
   */
  relayConnectionDue: (connectionId: string): Key => ({ pk: `RELAY#${connectionId}`, sk: 'DUE' }),
  /**
   * One turn of a relay call (its model messages, transcript lines and tool calls), in the call's
   * own relay partition so a reconnected session goes on with the same history; `seq` sorts turns
   * in order (the session's start, then the turn number). Read newest first, as many as the model's
   * history holds; no item grows with the call.
   */
  relayTurn: (callId: string, seq: string): Key => ({ pk: `RELAYCALL#${callId}`, sk: `TURN#${seq}` }),
  relayTurns: (callId: string) => `RELAYCALL#${callId}`,
  relayTurnPrefix: 'TURN#',
  /** A charge in the organization's billing ledger (UUID v7 ids sort by time). */
  charge: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.charge}${id}` }),
  /** The simulated carrier's own record of a number it sold, one partition per country. */
  simulatedCarrierPool: (country: string) => `SIMCARRIER#${country}`,
  simulatedCarrierNumber: (country: string, e164: string): Key => ({ pk: `SIMCARRIER#${country}`, sk: e164 }),
  /** A contact; its stats counters live on the same item so every write bumps them atomically. */
  contact: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.contact}${id}` }),
  /**
   * A contact search entry: `CSEARCH#<kind>#<value>#<contactId>` (kind `name` for each first or
   * last name, `full` for "first last", `email`, `phone`), written in the contact's transaction.
   */
  contactSearch: (orgId: string, kind: string, value: string, contactId: string): Key => ({
    pk: org(orgId),
    sk: `${Prefix.contactSearch}${kind}#${value}#${contactId}`,
  }),
  /** The sort-key prefix every search entry of one kind starting with `value` shares. */
  contactSearchPrefix: (kind: string, value: string, exact: boolean) => `${Prefix.contactSearch}${kind}#${value}${exact ? '#' : ''}`,
  /** A contact's history partition: notes, activities and calls, deleted with the contact. */
  contactHistory: (orgId: string, contactId: string) => `${org(orgId)}#CONTACT#${contactId}`,
  contactNote: (orgId: string, contactId: string, noteId: string): Key => ({ pk: `${org(orgId)}#CONTACT#${contactId}`, sk: `NOTE#${noteId}` }),
  /** Activities sort by time: `ACT#<ISO time>#<uuid v7>`. */
  contactActivity: (orgId: string, contactId: string, at: string, id: string): Key => ({ pk: `${org(orgId)}#CONTACT#${contactId}`, sk: `ACT#${at}#${id}` }),
  /** A call in a contact's history, by call id (UUID v7, so the partition sorts by time). */
  contactCall: (orgId: string, contactId: string, callId: string): Key => ({ pk: `${org(orgId)}#CONTACT#${contactId}`, sk: `CALL#${callId}` }),
  contactHistoryPrefix: { note: 'NOTE#', activity: 'ACT#', call: 'CALL#' },
  appointment: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.appointment}${id}` }),
  /** Finds our appointment from the external scheduler's booking uid (webhooks). */
  appointmentByBookingUid: (orgId: string, uid: string): Key => ({ pk: org(orgId), sk: `APPTUID#${uid}` }),
  /**
   * One lock per agent per 5-minute bucket an accepted appointment covers, put with
   * attribute_not_exists in the booking's transaction: two overlapping bookings cannot both land.
   */
  agentSlot: (orgId: string, agentId: string, bucketStart: string): Key => ({ pk: org(orgId), sk: `AGENTSLOT#${agentId}#${bucketStart}` }),
  workingHours: (orgId: string, agentId: string): Key => ({ pk: org(orgId), sk: `WORKHOURS#${agentId}` }),
  /** The organization's external scheduling integration (Cal.com), its secrets sealed. */
  schedulingIntegration: (orgId: string): Key => ({ pk: org(orgId), sk: 'SCHEDINT' }),
  /** A call session (UUID v7 ids, so the organization's calls sort by creation time). */
  call: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.call}${id}` }),
  /** A chat (UUID v7 ids, so the organization's chats sort by start). Its messages live in a partition of their own. */
  chat: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.chat}${id}` }),
  /** One chat's messages: `MSG#<seq, 6 digits>`, in order; each message is its own item, so a long chat never nears the item size limit. */
  chatMessages: (orgId: string, chatId: string) => `${org(orgId)}#CHAT#${chatId}`,
  chatMessage: (orgId: string, chatId: string, seq: number): Key => ({ pk: `${org(orgId)}#CHAT#${chatId}`, sk: `MSG#${typeof seq === 'number' ? String(seq).padStart(6, '0') : seq}` }),
  chatMessagePrefix: 'MSG#',
  /**
   * A call's entry in one of its immutable list filters (`agent`, `campaign`, `contact`):
   * `CALLIDX#<dimension>#<value>#<callId>`, written once with the call, so a filter is a range.
   */
  callIndex: (orgId: string, dimension: CallIndexDimension, value: string, callId: string): Key => ({
    pk: org(orgId),
    sk: `${Prefix.callIndex}${dimension}#${value}#${callId}`,
  }),
  /** The sort-key prefix of one filter value's index entries. */
  callIndexPrefix: (dimension: CallIndexDimension, value: string) => `${Prefix.callIndex}${dimension}#${value}#`,
  /**
   * A number on the organization's do-not-call list, keyed by the number itself (E.164): "may we
   * dial this?" is one GetItem, adding it twice finds the first entry, and the list sorts by number.
   */
  dnc: (orgId: string, e164: string): Key => ({ pk: org(orgId), sk: `${Prefix.dnc}${e164}` }),
  campaign: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.campaign}${id}` }),
  /** A campaign's own partition: its campaign contacts and phone-number markers, deleted with it. */
  campaignPartition: (orgId: string, campaignId: string) => `${org(orgId)}#CAMPAIGN#${campaignId}`,
  /** A campaign contact; its id is derived from campaign and contact (UUID v5), so a contact is in a campaign once. */
  campaignContact: (orgId: string, campaignId: string, id: string): Key => ({ pk: `${org(orgId)}#CAMPAIGN#${campaignId}`, sk: `${Prefix.campaignContact}${id}` }),
  /**
   * The campaign contact that was dialed first on an E.164 number in a campaign (written by its claim,
   * in the same transaction): any other contact of the campaign with that number fails as a duplicate.
   */
  campaignNumber: (orgId: string, campaignId: string, e164: string): Key => ({ pk: `${org(orgId)}#CAMPAIGN#${campaignId}`, sk: `NUM#${e164}` }),
  /**
   * The call session placed for one attempt of a campaign contact (written with the call, in one
   * transaction): a second request for the same attempt finds it and places nothing new.
   */
  campaignAttemptCall: (orgId: string, campaignId: string, campaignContactId: string, attempt: number): Key => ({
    pk: `${org(orgId)}#CAMPAIGN#${campaignId}`,
    sk: `ATTEMPT#${campaignContactId}#${attempt}`,
  }),
  /**
   * The call a `POST /calls` with an Idempotency-Key created (written with the call, in one
   * transaction; `ttl` a day, as the key's own record): a retry after a failure that followed the
   * write answers that call instead of making a second one. `keyHash`: SHA-256 of the key, hex.
   */
  callRequest: (orgId: string, keyHash: string): Key => ({ pk: org(orgId), sk: `CALLREQ#${keyHash}` }),
  /** A webhook endpoint (its signing secrets sealed). */
  webhook: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.webhook}${id}` }),
  /** An event (the outbox): written in the transaction of the change it reports; UUID v7 ids sort by time. */
  event: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.event}${id}` }),
  /** One endpoint's delivery partition: its delivery jobs and its delivery log. */
  webhookPartition: (orgId: string, webhookId: string) => `${org(orgId)}#WEBHOOK#${webhookId}`,
  /** The delivery job of one event to one endpoint: its id is the pair, so fan-out can never write it twice. */
  webhookJob: (orgId: string, webhookId: string, eventId: string): Key => ({ pk: `${org(orgId)}#WEBHOOK#${webhookId}`, sk: `JOB#${eventId}` }),
  /** One delivery attempt in the endpoint's log (UUID v7 ids: newest first is a descending query). */
  webhookDelivery: (orgId: string, webhookId: string, deliveryId: string): Key => ({ pk: `${org(orgId)}#WEBHOOK#${webhookId}`, sk: `DELIVERY#${deliveryId}` }),
  webhookDeliveryPrefix: 'DELIVERY#',
  /**
   * Conversation analytics counters (shared/domain/analytics): one partition per organization,
   * agent (or `ALL`) and channel (`call`, `chat` or `ALL`), one item per UTC day of the ends it
   * counts (`DAY#YYYY-MM-DD`), its members moved with ADD; a window of days is one Query. Beside
   * each day item, the same ADD moves its UTC hour's item (`HOUR#YYYY-MM-DDTHH`, sorting after
   * every DAY#): a read in another time zone sums the hours into the zone's local days.
   */
  conversationStats: (orgId: string, agent: string, channel: string) => `${org(orgId)}#STATS#${agent}#${channel}`,
  conversationStatsDay: (orgId: string, agent: string, channel: string, day: string): Key => ({ pk: `${org(orgId)}#STATS#${agent}#${channel}`, sk: `DAY#${day}` }),
  conversationStatsDayPrefix: 'DAY#',
  conversationStatsHour: (orgId: string, agent: string, channel: string, hour: string): Key => ({ pk: `${org(orgId)}#STATS#${agent}#${channel}`, sk: `HOUR#${hour}` }),
  conversationStatsHourPrefix: 'HOUR#',
};

/** Shards of the cross-organization sparse indexes below: writes spread over this many partitions. */
export const SWEEP_SHARDS = 8;

/** A stable shard (0 … SWEEP_SHARDS-1) from the random tail of one or more UUIDs. */
export function shardOf(...ids: string[]): number {
  return ids.reduce((n, id) => n + parseInt(id.slice(-4), 16), 0) % SWEEP_SHARDS;
}
/** The list filters of calls that have index entries of their own. */
export type CallIndexDimension = 'agent' | 'campaign' | 'contact';

/** GSI1: a collection filtered by status, `ORG#<org>#<ENTITY>#<status>` → id. */
export const gsi1 = {
  name: 'gsi1',
  byStatus: (orgId: string, entity: string, status: string) => `${org(orgId)}#${entity}#STATUS#${status}`,
  /** The documents of one knowledge base, `ORG#<org>#KB#<kb>#DOCS` → doc_id. */
  kbDocuments: (orgId: string, kbId: string) => `${org(orgId)}#KB#${kbId}#DOCS`,
  /** An agent's appointments by start time (gsi1sk = `<start ISO>#<id>`): availability and the agent filter. */
  appointmentsOfAgent: (orgId: string, agentId: string) => `${org(orgId)}#APPT#AGENT#${agentId}`,
  /**
   * A campaign's due contacts (sparse: only `pending` ones), gsi1sk = `<due ISO>#<campaign contact id>`:
   * "due by now" is a range read of O(due) items, oldest due first.
   */
  campaignDue: (orgId: string, campaignId: string) => `${org(orgId)}#CAMPAIGN#${campaignId}#DUE`,
  /** A campaign's claimed contacts whose call is not placed yet (sparse), gsi1sk = `<lease end ISO>#<id>`. */
  campaignLeases: (orgId: string, campaignId: string) => `${org(orgId)}#CAMPAIGN#${campaignId}#LEASE`,
  /** The organization's events of one type (gsi1sk = event id, so it sorts by time): the `type` filter. */
  eventsOfType: (orgId: string, type: string) => `${org(orgId)}#EVENT#TYPE#${type}`,
  /** An endpoint's delivery log split by outcome (gsi1sk = delivery id): the `succeeded` filter. */
  webhookDeliveriesByOutcome: (orgId: string, webhookId: string, succeeded: boolean) => `${org(orgId)}#WEBHOOK#${webhookId}#DELIVERY#${succeeded ? 'ok' : 'failed'}`,
};

/**
 * GSI2: what a public widget needs without an API key. A widget item and every agent tied
 * to it share `WIDGET#<widgetId>`, so the public config is one Query.
 */
export const gsi2 = {
  name: 'gsi2',
  widget: (widgetId: string) => `WIDGET#${widgetId}`,
  widgetSelf: 'WIDGET',
  agentOfWidget: (agentId: string) => `AGENT#${agentId}`,
  /** Every appointment of an organization by start time (gsi2sk = `<start ISO>#<id>`): the from/to filter. */
  appointmentsByStart: (orgId: string) => `${org(orgId)}#APPT`,
  /**
   * Purchased numbers due for renewal, one partition per due day (UTC `YYYY-MM-DD`), across
   * organizations: the renewal job reads a handful of day partitions, never a Scan. Sparse: only
   * an active purchased number carries these attributes; release removes them. Sort key
   * `<next_renewal_at ISO>#<org>#<id>`, so "due by now" is a range on today's partition.
   */
  renewalsDue: (day: string) => `RENEWAL#${day}`,
  renewalEntry: (dueAt: string, orgId: string, numberId: string) => `${dueAt}#${orgId}#${numberId}`,
  /** A campaign's contacts of one status, gsi2sk = campaign contact id: the `status` filter. */
  campaignContactsByStatus: (orgId: string, campaignId: string, status: string) => `${org(orgId)}#CAMPAIGN#${campaignId}#STATUS#${status}`,
  /**
   * Campaigns the engine must visit (started and not yet finished with every call), across
   * organizations, in a few shards: the per-minute tick reads these partitions, never a Scan.
   * gsi2sk = `<org>#<campaign id>`.
   */
  activeCampaigns: (shard: number) => `ACTIVECAMPAIGNS#${shard}`,
  activeCampaignEntry: (orgId: string, campaignId: string) => `${orgId}#${campaignId}`,
  /**
   * Events not yet fanned out, across organizations, in SWEEP_SHARDS partitions (shard from the
   * event id). Sparse and short-lived: the fan-out removes the attributes, so the index holds
   * only what is in flight (or what a crash left behind for the minute sweep).
   */
  eventsUndispatched: (shard: number) => `EVENTQ#${shard}`,
  eventEntry: (createdAt: string, orgId: string, eventId: string) => `${createdAt}#${orgId}#${eventId}`,
  /**
   * Pending webhook delivery jobs by the time the minute sweep should look at them, across
   * organizations, in SWEEP_SHARDS partitions. Sparse: only a pending job carries it; its last
   * attempt (success, give-up, drop) removes it. Sort `<sweep_at ISO>#<org>#<webhook>#<event>`.
   */
  webhookJobsDue: (shard: number) => `WHDUE#${shard}`,
  webhookJobEntry: (sweepAt: string, orgId: string, webhookId: string, eventId: string) => `${sweepAt}#${orgId}#${webhookId}#${eventId}`,
  /**
   * Calls not ended yet, by the time the recovery sweep may end them: one partition per due hour
   * (UTC `YYYY-MM-DDTHH`) and shard (0…CALL_DUE_SHARDS-1, from the call id), across organizations.
   * Sparse: the entry leaves with the call's end. Sort key `<due_at ISO>#<org>#<id>`.
   */
  callsDue: (hour: string, shard: number) => `CALLDUE#${hour}#${shard}`,
  /**
   * Open chats by the time they fall idle, across organizations (the inactivity sweep): one
   * partition per shard (from the chat id). Sparse: an ended chat has none. Sort key
   * `<idle_at ISO>#<org>#<chat id>`; every turn moves it 30 minutes ahead.
   */
  chatsIdle: (shard: number) => `CHATIDLE#${shard}`,
  chatIdleEntry: (idleAt: string, orgId: string, chatId: string) => `${idleAt}#${orgId}#${chatId}`,
  callDueEntry: (dueAt: string, orgId: string, callId: string) => `${dueAt}#${orgId}#${callId}`,
  /**
   * Agent test runs not completed yet, by the time they expire, across organizations, in
   * SWEEP_SHARDS partitions (shard from the run id): the test-run sweep completes expired runs.
   * Sparse: the run's completion removes it. Sort key `<expires_at ISO>#<org>#<agent>#<run>`.
   */
  testRunsOpen: (shard: number) => `TESTRUNOPEN#${shard}`,
  /**
   * Agent deletions not finished yet (their tombstones), across organizations, in SWEEP_SHARDS
   * partitions (shard from the agent id): the sweep queues again a cleanup whose message was lost.
   * Sort key `<deleted_at ISO>#<org>#<agent>`.
   */
  agentDeletions: (shard: number) => `AGENTDELETION#${shard}`,
  agentDeletionEntry: (deletedAt: string, orgId: string, agentId: string) => `${deletedAt}#${orgId}#${agentId}`,
  testRunOpenEntry: (expiresAt: string, orgId: string, agentId: string, runId: string) => `${expiresAt}#${orgId}#${agentId}#${runId}`,
};

/** Counter collection names. */
export const collections = {
  agents: 'agents',
  agentsByStatus: (status: string) => `agents#status#${status}`,
  agentTests: (agentId: string) => `agent-tests#${agentId}`,
  agentTestRuns: (agentId: string) => `agent-test-runs#${agentId}`,
  tools: 'tools',
  widgets: 'widgets',
  apiKeys: 'api-keys',
  knowledgeBases: 'knowledge-bases',
  kbDocuments: (kbId: string) => `kb-docs#${kbId}`,
  phoneNumbers: 'phone-numbers',
  phoneNumbersByStatus: (status: string) => `phone-numbers#status#${status}`,
  charges: 'charges',
  contacts: 'contacts',
  appointments: 'appointments',
  calls: 'calls',
  chats: 'chats',
  dnc: 'dnc',
  campaigns: 'campaigns',
  campaignsByStatus: (status: string) => `campaigns#status#${status}`,
  webhooks: 'webhooks',
};
