/**
 * Every access pattern of the table, named, with its key condition. docs/data-model.md is
 * generated from this list (`npm run docs:data-model`) and a test keeps the two in step, so
 * a new pattern cannot ship undocumented. `ORG` stands for `ORG#<organizationId>`.
 */
import { gsi1, gsi2, keys, type Key } from './keys';

/** One kind of item: its key as built by keys.ts (placeholders in angle brackets), and its index keys. */
export interface ItemShape {
  item: string;
  key: Key;
  /** `gsi1pk / gsi1sk` when the item is in gsi1. */
  gsi1?: string;
  gsi2?: string;
  notes?: string;
}

const O = '<org>';
const ID = '<id>';
const ix = (pk: string, sk: string) => `${pk} / ${sk}`;

/**
 * Every item kind of the table, each key computed by its builder in keys.ts (never typed here),
 * so docs/data-model.md's item table cannot drift from the code; a test checks that every key
 * builder and index builder of keys.ts appears in it.
 */
export const itemShapes: ItemShape[] = [
  { item: 'organization', key: keys.organization(O) },
  { item: 'organization (admin directory)', key: keys.organizationDirectory(O) },
  { item: 'counter', key: keys.counter(O, '<collection>') },
  { item: 'concurrency counter', key: keys.concurrency(O), notes: '`total`, `outbound`, `inbound`, `web` live calls (ADD only in the transactions that put or delete a slot, so always equal to the slots), the organization\'s `limit`, the operator\'s `ceiling` (shared/domain/concurrency/slots.ts), and `queued`: calls waiting for a slot (ADD only with their CALLWAIT# entries)' },
  { item: 'concurrency slot (one per live call)', key: keys.concurrencySlot(O, '<call id>'), gsi2: ix(gsi2.callsDue('<YYYY-MM-DDTHH>', '<shard>' as unknown as number), gsi2.callDueEntry('<due_at>', O, 'SLOT#<call id>')), notes: 'put with the call (attribute_not_exists) and the counter\'s conditional ADD; deleted (attribute_exists) with the call\'s end and ADD -1, in the end\'s transaction; due 5 minutes after its call, so the recovery sweep frees one whose call ended or never existed' },
  { item: 'waiting call (`"queue": true` at the limit)', key: keys.callWaiting(O, '<call id>'), notes: 'the organization\'s FIFO (ids are UUID v7: creation order); put with the call and CONCURRENCY ADD queued 1 (conditioned on the limit being reached or calls waiting); deleted when the call is placed (with its slot) or ends waiting (`queue_timeout`), with ADD queued -1 (shared/domain/calls/queued-calls.ts)' },
  { item: 'API key record', key: keys.apiKey(O, ID) },
  { item: 'API key lookup', key: keys.apiKeyByHash('<sha256(key)>') },
  { item: 'rate-limit counter', key: keys.rateCounter('<key id>', '<minute>' as unknown as number), notes: 'expires through `ttl`' },
  { item: 'widget chat starts counter', key: keys.widgetChatStarts('<widget id>', '<minute>' as unknown as number), notes: 'expires through `ttl`' },
  { item: 'widget client chat starts counter', key: keys.widgetClientChatStarts('<widget id>', '<address>', '<minute>' as unknown as number), notes: 'expires through `ttl`' },
  { item: 'widget chat messages counter', key: keys.widgetChatMessages('<chat id>', '<minute>' as unknown as number), notes: 'expires through `ttl`' },
  { item: 'widget daily messages counter', key: keys.widgetDailyMessages('<widget id>', '<YYYY-MM-DD>'), notes: 'expires through `ttl`' },
  { item: 'stored idempotent answer', key: keys.idempotency(O, '<operation>', '<key>'), notes: 'expires through `ttl`' },
  { item: 'agent', key: keys.agent(O, ID), gsi1: ix(gsi1.byStatus(O, 'AGENT', '<status>'), ID), gsi2: ix(gsi2.widget('<widget id>'), gsi2.agentOfWidget(ID)), notes: 'in gsi2 only when tied to a widget' },
  { item: 'agent version (immutable)', key: keys.agentVersion(O, '<agent id>', '<n>' as unknown as number), notes: `sk VER#<n, 10 digits>; written once (attribute_not_exists) with the agent's last_version counter; a process keeps it in memory` },
  { item: 'agent test', key: keys.agentTest(O, '<agent id>', ID) },
  { item: 'agent test run', key: keys.agentTestRun(O, '<agent id>', '<uuid v7>'), gsi2: ix(gsi2.testRunsOpen('<shard>' as unknown as number), gsi2.testRunOpenEntry('<expires at>', O, '<agent id>', '<id>')), notes: 'total, done, passed, failed, errored, not_evaluated moved with ADD by each result; a draft run keeps the frozen draft (`config`); gsi2 only until it completes (the agent-test sweep completes it at `expires_at`)' },
  { item: 'agent test slots (fairness)', key: { pk: keys.partition(O), sk: 'AGENTTESTSLOTS' }, notes: '`jobs`: test job → lease end (epoch ms); a job claims a slot (read, then written conditioned on `version`) before it converses, at most 20 live (ORG_JOB_CAP); its result frees it, an expired lease frees itself' },
  { item: 'agent deletion (tombstone)', key: keys.agentDeletion(O, '<agent id>'), gsi2: ix(gsi2.agentDeletions('<shard>' as unknown as number), gsi2.agentDeletionEntry('<deleted at>', O, '<agent id>')), notes: 'put in the transaction that deletes the agent item; the agent-cleanup job deletes it once the agent\'s partition is empty; the sweep queues the cleanup again for one older than 15 minutes' },
  { item: 'agent test run\'s frozen test', key: keys.agentTestRunTest(O, '<agent id>', '<run id>', '<test id>'), notes: 'a copy of the test written when the run starts (BatchWriteItem); the run\'s jobs read it, so edits and deletions of the test do not reach the run' },
  { item: 'agent test result', key: keys.agentTestResult(O, '<agent id>', '<run id>', '<test id>#<attempt>' as `${string}#${number}`), notes: 'written once by its job, in the transaction that counts it on the run' },
  { item: 'tool', key: keys.tool(O, ID) },
  { item: 'widget settings', key: keys.widget(O, ID), gsi2: ix(gsi2.widget(ID), gsi2.widgetSelf) },
  { item: 'knowledge base', key: keys.knowledgeBase(O, ID) },
  { item: 'knowledge-base document', key: keys.kbDocument(O, '<doc id>'), gsi1: ix(gsi1.kbDocuments(O, '<kb id>'), '<doc id>') },
  { item: 'file upload', key: keys.kbUpload(O, ID), notes: 'expires through `ttl`' },
  { item: 'phone number', key: keys.phoneNumber(O, ID), gsi1: ix(gsi1.byStatus(O, 'PHONE_NUMBER', '<status>'), ID), gsi2: ix(gsi2.renewalsDue('<YYYY-MM-DD of next_renewal_at>'), gsi2.renewalEntry('<next_renewal_at>', O, ID)), notes: 'in gsi2 only while an active purchased number' },
  { item: 'number claim (who holds an E.164 number)', key: keys.numberClaim('<e164>') },
  { item: 'inbound call marker (one session per carrier call)', key: keys.inboundCall('<provider>', '<carrier call id>'), notes: 'expires through `ttl` a day after the call' },
  { item: 'minute sweep\'s next-due marker', key: keys.sweepMarker('<job: call-recovery | chat-sweep | webhook-sweep>'), notes: '`next_due_at`: no entry of the sweep\'s index is due earlier (shared/db/sweep-marker.ts)' },
  { item: 'voice stream token marker (one stream per token)', key: keys.voiceStreamToken('<sha256 of the token>'), notes: 'the call it admitted; expires through `ttl` an hour after the token' },
  { item: 'ConversationRelay connection', key: keys.relayConnection('<API Gateway connection id>'), notes: 'the call, the agent version\'s settings read at connect, turn counters, a pending interruption, the ending, `version`; small whatever the call\'s length (the conversation is in its turns); `last_prompt_ms`; expires through `ttl`' },
  { item: 'ConversationRelay connection\'s due entry', key: keys.relayConnectionDue('<API Gateway connection id>'), gsi2: ix(gsi2.callsDue('<YYYY-MM-DDTHH>', '<shard>' as unknown as number), gsi2.callDueEntry('<due_at>', 'relay', '<connection id>')), notes: 'the call and the connection; due 20 minutes after the connection opened, moved on by the recovery sweep while prompts come (`last_prompt_ms`), so the sweep finds a session whose `$disconnect` never came; an item of its own so the state\'s writes rewrite no index copy; deleted with the state; expires through `ttl`' },
  { item: 'ConversationRelay turn', key: keys.relayTurn('<call id>', '<session start ms>#<connection id>#<turn>'), notes: 'one turn of a relay call: the model\'s messages, its transcript lines and tool calls with whole results (the call gets them whole when the session ends); expires through `ttl`' },
  { item: 'charge', key: keys.charge(O, '<uuid v7>'), notes: 'a renewal\'s id is derived from number + period; amount_units × 10^-amount_scale (scale 4; items written before hold amount_cents, read as scale 2)' },
  { item: 'simulated carrier: sold number', key: keys.simulatedCarrierNumber('<country>', '<e164>') },
  { item: 'contact', key: keys.contact(O, ID) },
  { item: 'contact search entry', key: keys.contactSearch(O, '<kind>', '<value>', '<contact id>'), notes: 'kind: name, full, email, phone' },
  { item: 'contact note', key: keys.contactNote(O, '<contact id>', ID) },
  { item: 'contact activity', key: keys.contactActivity(O, '<contact id>', '<time>', '<uuid>') },
  { item: 'contact call', key: keys.contactCall(O, '<contact id>', '<call id>') },
  { item: 'appointment', key: keys.appointment(O, ID), gsi1: ix(gsi1.appointmentsOfAgent(O, '<agent id>'), '<start>#<id>'), gsi2: ix(gsi2.appointmentsByStart(O), '<start>#<id>') },
  { item: 'appointment by booking uid', key: keys.appointmentByBookingUid(O, '<uid>') },
  { item: 'agent slot lock (5 minutes)', key: keys.agentSlot(O, '<agent id>', '<bucket start>') },
  { item: 'working hours', key: keys.workingHours(O, '<agent id>') },
  { item: 'scheduling integration', key: keys.schedulingIntegration(O) },
  { item: 'do-not-call entry', key: keys.dnc(O, '<e164>') },
  { item: 'campaign', key: keys.campaign(O, ID), gsi2: ix(gsi2.activeCampaigns('<shard>' as unknown as number), gsi2.activeCampaignEntry(O, ID)), notes: 'in gsi2 from start until completed with no call in flight' },
  { item: 'campaign contact (pending)', key: keys.campaignContact(O, '<campaign id>', '<uuid v5>'), gsi1: ix(gsi1.campaignDue(O, '<campaign id>'), '<due>#<id>'), gsi2: ix(gsi2.campaignContactsByStatus(O, '<campaign id>', '<status>'), '<id>'), notes: 'gsi1 only while pending' },
  { item: 'campaign contact (claimed)', key: keys.campaignContact(O, '<campaign id>', '<uuid v5>'), gsi1: ix(gsi1.campaignLeases(O, '<campaign id>'), '<lease end>#<id>'), notes: 'gsi1 only while claimed and its call not placed' },
  { item: 'campaign number marker', key: keys.campaignNumber(O, '<campaign id>', '<e164>'), notes: 'finds duplicate numbers' },
  { item: 'campaign attempt → call', key: keys.campaignAttemptCall(O, '<campaign id>', '<cc id>', '<attempt>' as unknown as number), notes: 'the call placed for one attempt: placing it again answers the same call' },
  { item: 'webhook endpoint', key: keys.webhook(O, ID) },
  { item: 'event (outbox)', key: keys.event(O, '<uuid v7>'), gsi1: ix(gsi1.eventsOfType(O, '<type>'), '<id>'), gsi2: ix(gsi2.eventsUndispatched('<shard>' as unknown as number), gsi2.eventEntry('<created_at>', O, '<id>')), notes: 'gsi2 until fanned out (an event no endpoint wanted keeps it, read past once by webhook-sweep); expires through `ttl` (30 days)' },
  { item: 'webhook delivery job', key: keys.webhookJob(O, '<webhook id>', '<event id>'), gsi2: ix(gsi2.webhookJobsDue('<shard>' as unknown as number), gsi2.webhookJobEntry('<sweep_at>', O, '<webhook id>', '<event id>')), notes: 'gsi2 only while pending' },
  { item: 'webhook delivery attempt', key: keys.webhookDelivery(O, '<webhook id>', '<uuid v7>'), gsi1: ix(gsi1.webhookDeliveriesByOutcome(O, '<webhook id>', true), '<id>'), notes: 'gsi1 ends in `#ok` or `#failed`; expires through `ttl` (30 days)' },
  { item: 'call session', key: keys.call(O, '<uuid v7>'), gsi1: ix(gsi1.byStatus(O, 'CALL', '<status>'), '<id>'), gsi2: ix(gsi2.callsDue('<YYYY-MM-DDTHH>', '<shard>' as unknown as number), gsi2.callDueEntry('<due_at>', O, '<id>')), notes: 'gsi2 only until the call ends and its after-end steps are done (the recovery sweep)' },
  { item: 'call index entry', key: keys.callIndex(O, '<agent|campaign|contact>' as never, '<value>', '<call id>'), notes: 'the agent, campaign and contact filters of GET /calls' },
  { item: 'chat', key: keys.chat(O, '<uuid v7>'), gsi1: ix(gsi1.byStatus(O, 'CHAT', '<status>'), '<id>'), gsi2: ix(gsi2.chatsIdle('<shard>' as unknown as number), gsi2.chatIdleEntry('<last message + 30 min>', O, '<id>')), notes: 'gsi2 only while open (the inactivity sweep); `message_count` is the turn guard; `turn_claim` / `turn_claim_until` (epoch ms) while a turn runs; `incomplete_turn` (`user_text`, `from_seq`, `rounds_used`) after a turn kept when its model failed; `latest_messages`: the latest messages not yet filed (at most 2 KiB), merged by every reader; `filed_count`: how many of the first messages are filed' },
  { item: 'conversation analytics counters (one UTC day)', key: keys.conversationStatsDay(O, '<agent id|ALL~0..3|ALL>', '<call|chat|openai|ALL>', '<YYYY-MM-DD>'), notes: 'all-agents counts in 4 shards ALL~<n> (from the conversation id; ALL holds older counts and the OpenAI endpoint usage); ver#<version>#… per agent version; flat numbers moved with ADD: calls, chats, end#<reason>, successful, analyzed, seconds, prompt_tokens, completion_tokens, cost_units (10^-4 USD), field#<name>#<value>; a conversation records what it added (`stats_counted`)' },
  { item: 'conversation analytics counters (one UTC hour)', key: keys.conversationStatsHour(O, '<agent id|ALL~0..3>', '<call|chat|ALL>', '<YYYY-MM-DDTHH>'), notes: 'beside each day item, moved by the same ADD in the same transaction (the members of the day item); read only by a read in a time zone, which sums the hours into local days; conversations counted before the hours existed join them at their next count (`stats_counted.hour`)' },
  { item: 'chat message', key: keys.chatMessage(O, '<chat id>', '<seq>' as unknown as number), notes: 'the messages filed together (the chat\'s `latest_messages`, at most 2 KiB) as one page item under the first one\'s number (`messages`), or one item per message of a large or ending turn (at most 4,000 characters or a 16 KiB tool result), so a chat never nears the 400 KB item limit' },
];

/** The item table of docs/data-model.md. */
export function itemTable(): string {
  const cell = (v?: string) => (v ? `\`${v}\`` : '');
  const rows = itemShapes.map((i) => `| ${i.item} | ${cell(i.key.pk)} | ${cell(i.key.sk)} | ${cell(i.gsi1)} | ${cell(i.gsi2)} | ${i.notes ?? ''} |`);
  return ['| item | pk | sk | gsi1 (pk / sk) | gsi2 (pk / sk) | notes |', '|---|---|---|---|---|---|', ...rows].join('\n');
}

export interface AccessPattern {
  name: string;
  operation: 'GetItem' | 'ConditionCheck' | 'Query' | 'TransactWriteItems' | 'PutItem' | 'UpdateItem' | 'DeleteItem';
  index: 'table' | 'gsi1' | 'gsi2';
  key: string;
  notes: string;
}

export const accessPatterns: AccessPattern[] = [
  { name: 'Authenticate an API key', operation: 'GetItem', index: 'table', key: 'pk = KEYHASH#<sha256(key)>, sk = KEYHASH', notes: 'the only global item read per request; cached in memory for API_KEY_CACHE_SECONDS' },
  { name: 'Count a request in its rate-limit window', operation: 'UpdateItem', index: 'table', key: 'pk = RATE#<keyId>#<minute since epoch>, sk = RATE', notes: 'every authenticated request: ADD n conditioned on n < limit, one write unit; `ttl` two minutes after the window; the only request-path write every function may make' },
  { name: 'Get an organization', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = ORG', notes: '' },
  { name: 'List organizations (admin)', operation: 'Query', index: 'table', key: 'pk = DIRECTORY#ORGS', notes: 'admin command only' },
  { name: 'Count a collection', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = COUNT#<collection>', notes: 'counter `n`, written in the same transaction as the items it counts' },
  { name: 'List API keys', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, APIKEY#)', notes: 'never returns the hash' },
  { name: 'Get an agent', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = AGENT#<id>', notes: '' },
  { name: 'List agents', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, AGENT#)', notes: 'UUID v7 ids sort by creation time' },
  { name: 'List agents by status', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#AGENT#STATUS#<status>', notes: 'total from COUNT#agents#status#<status>' },
  { name: 'Agents selecting a tool (tool delete)', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, AGENT#)', notes: 'projected to id, selected_tools, version; only on tool deletion' },
  { name: 'Numbers answered by an agent (agent delete)', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, PHONE#)', notes: 'projected to id, inbound_agent_id; only on agent deletion' },
  { name: 'Publish an agent version', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = AGENT#<id> + pk = ORG#AGENT#<id>, sk = VER#<n>', notes: 'agent: last_version and published_version conditioned on last_version as read; version: attribute_not_exists' },
  { name: "List an agent's versions", operation: 'Query', index: 'table', key: 'pk = ORG#AGENT#<id>, begins_with(sk, VER#)', notes: 'descending: newest first; total from the agent\'s last_version' },
  { name: 'Get an agent version', operation: 'GetItem', index: 'table', key: 'pk = ORG#AGENT#<id>, sk = VER#<n>', notes: 'kept in memory after the first read (a conversation on a version reads no agent)' },
  { name: "List an agent's tests", operation: 'Query', index: 'table', key: 'pk = ORG#AGENT#<id>, begins_with(sk, TEST#)', notes: 'total from COUNT#agent-tests#<agent id>' },
  { name: "List an agent's test runs", operation: 'Query', index: 'table', key: 'pk = ORG#AGENT#<id>, begins_with(sk, RUN#)', notes: 'descending: newest first; total from COUNT#agent-test-runs#<agent id>' },
  { name: "A test run's results", operation: 'Query', index: 'table', key: 'pk = ORG#AGENT#<id>, begins_with(sk, RESULT#<run id>#)', notes: 'GET one run; the job that completes it' },
  { name: 'Store a test result', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG#AGENT#<id>, sk = RESULT#<run>#<test>#<attempt> + RUN#<run>', notes: 'result attribute_not_exists; run ADD done and its outcome; completion: status conditioned on done = total, with test_run.completed' },
  { name: "Delete an agent's partition (agent delete)", operation: 'Query', index: 'table', key: 'pk = ORG#AGENT#<id>', notes: 'keys only, then BatchWriteItem deletes: versions, tests, runs, results' },
  { name: 'Get a tool', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = TOOL#<id>', notes: '' },
  { name: 'List tools', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, TOOL#)', notes: '' },
  { name: 'Get widget settings', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = WIDGET#<id>', notes: '' },
  { name: 'List widget settings', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, WIDGET#)', notes: '' },
  { name: 'Public widget config', operation: 'Query', index: 'gsi2', key: 'gsi2pk = WIDGET#<id>', notes: 'the widget item (gsi2sk = WIDGET) and its agents (gsi2sk = AGENT#<id>) in one query, no API key' },
  { name: 'Count a widget chat start (per widget, per client address)', operation: 'UpdateItem', index: 'table', key: 'pk = RATE#WIDGET#<id>#<minute> and RATE#WIDGET#<id>#IP#<address>#<minute>, sk = CHATS', notes: 'POST /widget/{id}/chats: ADD n conditioned on n < limit; `ttl` two minutes after the window' },
  { name: 'Count a widget chat message', operation: 'UpdateItem', index: 'table', key: 'pk = RATE#CHAT#<chat id>#<minute>, sk = MESSAGES', notes: 'POST /widget/{id}/chats/{chat_id}/messages and …/tool-results: ADD n conditioned on n < limit; `ttl` two minutes after the window' },
  { name: 'Count a widget visitor message of the day', operation: 'UpdateItem', index: 'table', key: 'pk = RATE#WIDGET#<id>#DAY#<YYYY-MM-DD>, sk = MESSAGES', notes: 'POST /widget/{id}/chats/{chat_id}/messages: ADD n conditioned on n < daily_message_limit (none when 0); `ttl` two minutes after the UTC day' },
  { name: 'Referenced knowledge base exists', operation: 'ConditionCheck', index: 'table', key: 'pk = ORG, sk = KB#<id>', notes: 'inside the agent write that references it' },
  { name: 'Claim / replay an Idempotency-Key', operation: 'PutItem', index: 'table', key: 'pk = ORG, sk = IDEM#<operationId>#<key>', notes: 'conditional put; expires through `ttl` after 24 h' },
  { name: 'Get a phone number', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = PHONE#<id>', notes: 'bought and imported numbers alike; `source` tells them apart' },
  { name: 'List phone numbers', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, PHONE#)', notes: 'released numbers stay listed with status `released`; total from COUNT#phone-numbers' },
  { name: 'List phone numbers by status', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#PHONE_NUMBER#STATUS#<status>', notes: 'total from COUNT#phone-numbers#status#<status>' },
  { name: 'Claim an E.164 number (buy, import)', operation: 'TransactWriteItems', index: 'table', key: 'pk = NUMBER#<e164>, sk = NUMBER', notes: 'attribute_not_exists, in the transaction that writes PHONE#<id> (and the charge): one holder per number' },
  { name: 'Find who holds a number (inbound call)', operation: 'GetItem', index: 'table', key: 'pk = NUMBER#<e164>, sk = NUMBER', notes: 'organization and number id of the holder' },
  { name: 'Create an inbound call session once', operation: 'TransactWriteItems', index: 'table', key: 'pk = INBOUND#<provider>#<call id>, sk = INBOUND + the call', notes: 'the marker put with attribute_not_exists beside the call: a repeated incoming-call webhook reads it (GetItem) and answers the same session' },
  { name: 'Admit one media stream per stream token', operation: 'TransactWriteItems', index: 'table', key: 'pk = VOICESTREAM#<token hash>, sk = VOICESTREAM + the call', notes: 'the marker put with attribute_not_exists and the call\'s `voice_stream_at` (the call not ended) in one transaction: a replayed token is refused in every runtime task' },
  { name: 'Open or change a relay connection', operation: 'TransactWriteItems', index: 'table', key: 'pk = RELAY#<connection id>, sk = RELAY', notes: 'put at `$connect` with attribute_not_exists (after the token is admitted); each message\'s change is guarded by the `version` it read (messages of one connection run in parallel) and applied again to a fresh read when another came first' },
  { name: 'Read a relay connection', operation: 'GetItem', index: 'table', key: 'pk = RELAY#<connection id>, sk = RELAY', notes: 'each `$default` message and `$disconnect`; a speaking reply and a waiting turn read only the turn counters and a pending interruption (projected, at most five times a second)' },
  { name: 'Write a relay turn', operation: 'TransactWriteItems', index: 'table', key: 'pk = RELAYCALL#<call id>, sk = TURN#<seq>', notes: 'with the connection\'s guarded change (the call item is not written per turn): the same units at every turn of the call' },
  { name: 'Read a relay call\'s history', operation: 'Query', index: 'table', key: 'pk = RELAYCALL#<call id>, begins_with(sk, TURN#)', notes: 'newest first, at most 60 turns: the model\'s history when this container does not know it already' },
  { name: 'Close a relay connection', operation: 'DeleteItem', index: 'table', key: 'pk = RELAY#<connection id>, sk = RELAY', notes: '`$disconnect` (best effort; else the recovery sweep writes the call\'s conversation when its entry falls due, and `ttl` removes it), after a turn in flight is written and the call\'s transcript and tool calls are written from the turns' },
  { name: 'Record an overflowing inbound call (at the limit, the number\'s overflow `reject` or `forward`)', operation: 'TransactWriteItems', index: 'table', key: 'pk = INBOUND#<provider>#<call id>, sk = INBOUND + pk = ORG, sk = CALL#<id>', notes: 'after the creation with a slot was cancelled at the limit: the marker and the call without a slot, then moved `ended` `concurrency_limit` or `forwarded` (`overflow_forwarded_to` kept for a retried webhook); `queue`: as Wait for a slot, with the marker' },
  { name: 'Update a number\'s overflow', operation: 'UpdateItem', index: 'table', key: 'pk = ORG, sk = PHONE#<id>', notes: 'after GetItem of the number (forward needs an `overflow_phone_number`, not itself), conditioned on its `updated_at` read: two racing updates cannot leave `forward` without a number (409)' },
  { name: 'Find the inbound call of a carrier status callback', operation: 'GetItem', index: 'table', key: 'pk = INBOUND#<provider>#<call id>, sk = INBOUND', notes: 'a number\'s StatusCallback carries only the CallSid: the marker names the organization and call' },
  { name: 'Release a phone number', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = PHONE#<id>; pk = NUMBER#<e164>, sk = NUMBER', notes: 'status active → released only while `in_use` is 0; deletes the claim; removes `next_renewal_at` and gsi2 (billing stops)' },
  { name: 'Referenced inbound agent exists', operation: 'ConditionCheck', index: 'table', key: 'pk = ORG, sk = AGENT#<id>', notes: 'inside the phone number write that sets inbound_agent_id' },
  { name: 'List billing charges', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, CHARGE#)', notes: 'UUID v7 ids sort by time; written in the transaction that causes the charge; total from COUNT#charges' },
  { name: 'Total the billing ledger', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, CHARGE#)', notes: 'every charge, amounts and created_at only (ProjectionExpression), summed as integers; O(ledger), like listing it all' },
  { name: 'Numbers due for renewal on a day (billing-renewals job)', operation: 'Query', index: 'gsi2', key: 'gsi2pk = RENEWAL#<YYYY-MM-DD>, gsi2sk < <now>$', notes: 'sparse: active purchased numbers only, gsi2sk = <next_renewal_at>#<org>#<id>; the days from today − 7 to today (UTC), keys only, then each number read consistently' },
  { name: 'Renew a number for one month', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CHARGE#<id of number + period> + PHONE#<id>', notes: 'charge put with attribute_not_exists (never twice); next_renewal_at, periods_billed and gsi2 moved a month on, conditioned on status active and the next_renewal_at read; + COUNT#charges' },
  { name: 'Simulated carrier: sold numbers', operation: 'Query', index: 'table', key: 'pk = SIMCARRIER#<country>, begins_with(sk, +<calling code><area>)', notes: 'simulated carrier only: its pool state, shared by every process; a sale is a conditional put' },
  { name: 'Get a knowledge base', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = KB#<id>', notes: 'also carries `index_version`, the current search index object in S3' },
  { name: 'List knowledge bases', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, KB#)', notes: 'document counts from COUNT#kb-docs#<id>, one GetItem per listed item' },
  { name: 'Publish a knowledge-base index version', operation: 'UpdateItem', index: 'table', key: 'pk = ORG, sk = KB#<id>', notes: 'conditioned on the `index_version` read (optimistic; the loser reloads)' },
  { name: 'Get a knowledge-base document', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = KBDOC#<doc_id>', notes: 'doc_id is unique per organization' },
  { name: 'Write / replace a document as pending', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = KBDOC#<doc_id>', notes: 'new: put + COUNT#kb-docs#<kb> + KB exists; replace: conditioned on the `generation` read' },
  { name: 'Mark a document indexed / failed', operation: 'UpdateItem', index: 'table', key: 'pk = ORG, sk = KBDOC#<doc_id>', notes: 'conditioned on the message\'s `generation`, so a stale or redelivered message changes nothing' },
  { name: 'List documents of a knowledge base', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#KB#<kb>#DOCS', notes: 'gsi1sk = doc_id; also the cascade of knowledge-base deletion' },
  { name: 'Record / read a file upload', operation: 'PutItem', index: 'table', key: 'pk = ORG, sk = KBUPLOAD#<id>', notes: 'read with GetItem on ingest; expires through `ttl` after 24 h' },
  // Contacts and appointments
  { name: 'Get a contact (with its stats counters)', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = CONTACT#<id>', notes: '`stats` map bumped in the same transaction as each note, call and booking' },
  { name: 'List contacts', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, CONTACT#)', notes: 'total from COUNT#contacts' },
  { name: 'Create / update / delete a contact with its search entries', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CONTACT#<id> + CSEARCH#<kind>#<value>#<id>', notes: 'kinds name (first, last), full, email, phone; moved with the contact, PATCH conditioned on `version`' },
  { name: 'Search contacts by name prefix', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, CSEARCH#name#<prefix>)', notes: 'filter drops a last-name entry whose first name matches too; total by Select COUNT over the same range; full name: CSEARCH#full#' },
  { name: 'Search contacts by email / phone', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, CSEARCH#email#<email># | CSEARCH#phone#<e164>#)', notes: 'exact match; contacts then read with BatchGetItem' },
  { name: 'Add a note', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG#<org>#CONTACT#<id>, sk = NOTE#<noteId> + ACT#<time>#<uuid>', notes: 'with the contact\'s stats.notes ADD (conditioned on the contact existing)' },
  { name: 'List a contact\'s notes', operation: 'Query', index: 'table', key: 'pk = ORG#<org>#CONTACT#<id>, begins_with(sk, NOTE#)', notes: 'total from stats.notes' },
  { name: 'A contact\'s timeline', operation: 'Query', index: 'table', key: 'pk = ORG#<org>#CONTACT#<id>, begins_with(sk, ACT#)', notes: 'descending, Limit 1000, answered oldest first' },
  { name: 'Record a contact\'s call (recordContactCall)', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG#<org>#CONTACT#<id>, sk = CALL#<callId> + ACT#…', notes: 'put if new (idempotent per call) + stats ADD; last_call_at only moves forward' },
  { name: 'A contact\'s call history', operation: 'Query', index: 'table', key: 'pk = ORG#<org>#CONTACT#<id>, begins_with(sk, CALL#)', notes: 'newest first; total from stats.total_calls' },
  { name: 'Delete a contact\'s history', operation: 'Query', index: 'table', key: 'pk = ORG#<org>#CONTACT#<id>', notes: 'keys only, then BatchWriteItem deletes of 25, after the contact item is gone' },
  { name: 'Book a built-in appointment', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = APPT#<id> + AGENTSLOT#<agent>#<bucket>…', notes: 'one lock per 5-minute bucket, attribute_not_exists; + agent guard, COUNT#appointments, contact stats and ACT#' },
  { name: 'Get an appointment', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = APPT#<id>', notes: '' },
  { name: 'List appointments', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, APPT#)', notes: 'no filter; total from COUNT#appointments' },
  { name: 'An agent\'s appointments by start (agent filter, availability)', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#APPT#AGENT#<agent>, gsi1sk BETWEEN <from> AND <to>', notes: 'gsi1sk = <start>#<id>; status as a filter; total by Select COUNT' },
  { name: 'Appointments by start (from/to filter)', operation: 'Query', index: 'gsi2', key: 'gsi2pk = ORG#APPT, gsi2sk BETWEEN <from> AND <to>', notes: 'gsi2sk = <start>#<id>; status as a filter; total by Select COUNT' },
  { name: 'Appointment by Cal.com booking uid', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = APPTUID#<uid>', notes: 'written with the appointment; read by webhooks' },
  { name: 'Agent working hours', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = WORKHOURS#<agent>', notes: 'PutItem to set, DeleteItem to remove' },
  { name: 'Scheduling integration', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = SCHEDINT', notes: 'api key and webhook secret sealed (KMS); PutItem / DeleteItem' },
  // Do-not-call list
  { name: 'Add a number to the do-not-call list', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = DNC#<e164>', notes: 'put with attribute_not_exists + COUNT#dnc; a listed number fails the condition and its entry is read and answered' },
  { name: 'Is a number on the do-not-call list (dialBlock, phone filter)', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = DNC#<e164>', notes: 'strongly consistent: the call job checks right before dialing (one BatchGetItem with the contact); the campaign dispatch and call creation read it in their own BatchGetItem' },
  { name: 'List the do-not-call list', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, DNC#)', notes: 'in E.164 order; total from COUNT#dnc' },
  { name: 'Remove a number from the do-not-call list', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = DNC#<e164>', notes: 'delete with attribute_exists + COUNT#dnc −1; a failed condition is a 404' },
  // Campaigns
  { name: 'Get a campaign', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = CAMPAIGN#<id>', notes: 'carries `contact_stats` (exact, `in_progress` = calls in flight) and `schedule`' },
  { name: 'List campaigns', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, CAMPAIGN#)', notes: 'total from COUNT#campaigns' },
  { name: 'List campaigns by status', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#CAMPAIGN#STATUS#<status>', notes: 'total from COUNT#campaigns#status#<status>' },
  { name: 'Create a campaign', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CAMPAIGN#<id>', notes: 'after its campaign contacts; + COUNT#campaigns(+status), agent and active number ConditionChecks' },
  { name: 'Write campaign contacts (create, add)', operation: 'PutItem', index: 'table', key: 'pk = ORG#<org>#CAMPAIGN#<id>, sk = CC#<uuidv5(campaign, contact)> + NUM#<e164>', notes: 'BatchWriteItem of 25, 8 in parallel, unprocessed retried; contacts validated and present ones found with BatchGetItem of 100; an add holds `adding_until` on the campaign' },
  { name: 'Campaign state move (start, pause, cancel, complete)', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CAMPAIGN#<id> + PHONE#<number>', notes: 'conditioned on the status read; `in_use` ADD ±1 on the number; the event outbox put; COUNT#campaigns#status#' },
  { name: 'Started campaigns (campaign-tick)', operation: 'Query', index: 'gsi2', key: 'gsi2pk = ACTIVECAMPAIGNS#<shard 0..3>', notes: 'sparse: set on start, removed when completed with no call in flight; gsi2sk = <org>#<id>' },
  { name: 'Due contacts of a campaign (dispatch)', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#CAMPAIGN#<id>#DUE, gsi1sk < <now>$', notes: 'sparse: pending contacts only, gsi1sk = <due_at>#<cc id>; pages of 100 up to the free capacity: O(due now); then one BatchGetItem of the page\'s contacts, their do-not-call entries and the campaign\'s agent and number' },
  { name: 'Claim a due contact', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG#<org>#CAMPAIGN#<id>, sk = CC#<cc> + pk = ORG, sk = CAMPAIGN#<id>', notes: 'contact pending → in_progress conditioned on status + attempt_count + due_at; campaign ADD counters conditioned on running and in_progress < max_concurrent' },
  { name: 'Expired leases of a campaign (dispatch)', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#CAMPAIGN#<id>#LEASE, gsi1sk < <now>$', notes: 'sparse: claimed contacts whose call is not placed yet; taken over conditioned on the lease read' },
  { name: 'Record a campaign call outcome', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG#<org>#CAMPAIGN#<id>, sk = CC#<cc> + pk = ORG, sk = CAMPAIGN#<id>', notes: 'conditioned on in_progress at that attempt (a duplicate changes nothing); a retry re-enters the due index' },
  { name: 'List a campaign\'s contacts', operation: 'Query', index: 'table', key: 'pk = ORG#<org>#CAMPAIGN#<id>, begins_with(sk, CC#)', notes: 'total from contact_stats.total; also the preview and the recount' },
  { name: 'List a campaign\'s contacts by status', operation: 'Query', index: 'gsi2', key: 'gsi2pk = ORG#CAMPAIGN#<id>#STATUS#<status>', notes: 'total from contact_stats.<status>' },
  { name: 'Delete a campaign\'s contacts', operation: 'Query', index: 'table', key: 'pk = ORG#<org>#CAMPAIGN#<id>', notes: 'keys only, BatchWriteItem deletes; inline up to 500 contacts, else the campaign-cleanup job' },
  // Events and webhooks
  { name: 'Publish an event (outbox)', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = EVENT#<id>', notes: 'put in the transaction of the change it reports; `body` = the serialized event; gsi1 = ORG#<org>#EVENT#TYPE#<type>; gsi2 EVENTQ#<shard> until fanned out (kept by an event no endpoint wants); `ttl` 30 days' },
  { name: 'Get an event', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = EVENT#<id>', notes: 'expired (ttl passed) answers 404' },
  { name: 'List events (from/to)', operation: 'Query', index: 'table', key: 'pk = ORG, sk BETWEEN EVENT#<id of from> AND EVENT#<id of to>', notes: 'descending; UUID v7 ids start with their time, so from/to are id bounds; ttl filter; total by Select COUNT' },
  { name: 'List events of a type', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#<org>#EVENT#TYPE#<type>, gsi1sk BETWEEN <id of from> AND <id of to>', notes: 'descending; ttl filter; total by Select COUNT' },
  { name: 'Undispatched events (webhook-sweep)', operation: 'Query', index: 'gsi2', key: 'gsi2pk = EVENTQ#<0..7>, gsi2sk BETWEEN <swept_through − 2 min> AND <horizon>$', notes: 'across organizations: events not yet fanned out, and those no endpoint wanted (passed over, behind the marker\'s `swept_through`); gsi2sk = <created_at>#<org>#<id>; 8 Queries when the sweep runs, and each organization\'s endpoints once' },
  { name: 'Get / list webhook endpoints', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, WEBHOOK#)', notes: 'GetItem by id; the list is also what fan-out reads (at most 20; a container keeps a copy for 60 s, only to pass over events no endpoint wants); total from COUNT#webhooks' },
  { name: 'Create a webhook endpoint', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = WEBHOOK#<id> + COUNT#webhooks', notes: 'the counter ADD is conditioned on n < 20: the cap holds under races; secrets sealed' },
  { name: 'Update / rotate / delete a webhook endpoint', operation: 'UpdateItem', index: 'table', key: 'pk = ORG, sk = WEBHOOK#<id>', notes: 'conditioned on `version`; delete is a transaction with COUNT#webhooks' },
  { name: 'Write a delivery job (fan-out)', operation: 'PutItem', index: 'table', key: 'pk = ORG#<org>#WEBHOOK#<webhook>, sk = JOB#<event>', notes: 'attribute_not_exists: one job per (event, endpoint) however often fan-out runs; then the event\'s gsi2 removed (UpdateItem)' },
  { name: 'Claim / record a delivery attempt', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG#<org>#WEBHOOK#<webhook>, sk = JOB#<event> + DELIVERY#<id>', notes: 'claim: UpdateItem conditioned on status, auto_attempt and no live claim; record: job moved on (conditioned on attempts and the claim) + log item put' },
  { name: 'Delivery jobs due (webhook-sweep)', operation: 'Query', index: 'gsi2', key: 'gsi2pk = WHDUE#<0..7>, gsi2sk < <now>$', notes: 'sparse, across organizations: pending jobs only; gsi2sk = <sweep_at>#<org>#<webhook>#<event>; long retries (30 min+) and lost messages' },
  { name: 'List an endpoint\'s deliveries', operation: 'Query', index: 'table', key: 'pk = ORG#<org>#WEBHOOK#<webhook>, begins_with(sk, DELIVERY#)', notes: 'descending; ttl filter; total by Select COUNT' },
  { name: 'List an endpoint\'s deliveries by outcome', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#<org>#WEBHOOK#<webhook>#DELIVERY#<ok|failed>', notes: 'the `succeeded` filter; descending; total by Select COUNT' },
  // Calls
  { name: 'Create a call', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CALL#<id> + CALLIDX#agent|campaign|contact#<value>#<id>', notes: 'after one BatchGetItem of its checks (agent, number claim, the campaign\'s number, contact, do-not-call entry); call put with gsi1 (status) and gsi2 (calls-due entry); one index entry per set filter member (they never change); + COUNT#calls; + the concurrency slot (SLOT#<id>, attribute_not_exists) and CONCURRENCY ADD 1 conditioned on total < limit and ceiling (a 429 when it fails; web and inbound calls the same)' },
  { name: 'Create a campaign call (campaign dialer)', operation: 'TransactWriteItems', index: 'table', key: 'as Create a call + pk = ORG#<org>#CAMPAIGN#<id>, sk = ATTEMPT#<cc>#<attempt>', notes: 'the attempt marker put only if absent: a repeated placement finds it in the creation\'s BatchGetItem (or its put fails) and answers the same call' },
  { name: 'Get a call', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = CALL#<id>', notes: 'recording_url presigned on every read' },
  { name: 'List calls', operation: 'Query', index: 'table', key: 'pk = ORG, sk BETWEEN CALL#<from id> AND CALL#<to id>', notes: 'newest first; UUID v7 ids bound the created-time range; total from COUNT#calls without filters, else Select COUNT over the same range' },
  { name: 'List calls by status', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#CALL#STATUS#<status>, gsi1sk BETWEEN <from id> AND <to id>', notes: 'gsi1pk moved by every state change; agent/campaign/contact as filters; total by Select COUNT' },
  { name: 'List calls by agent / campaign / contact', operation: 'Query', index: 'table', key: 'pk = ORG, sk BETWEEN CALLIDX#<dim>#<value>#<from id> AND …#<to id>', notes: 'contact, else campaign, else agent is the range; the others as filters; calls then read with BatchGetItem; total by Select COUNT' },
  { name: 'Move a call (state machine)', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CALL#<id> (+ EVENT#<id>, CHARGE#<id from call>)', notes: 'conditioned on status_rank < the new rank (never backwards, duplicates change nothing); call.started / call.ended events; the minutes charge and COUNT#charges with the end; the end deletes the call\'s slot (attribute_exists) and ADDs -1 to CONCURRENCY: freed exactly once; a waiting call\'s end deletes its CALLWAIT# entry (attribute_exists) and ADDs queued -1' },
  { name: 'Wait for a slot (`"queue": true` at the limit)', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CALL#<id> + CALLWAIT#<id> + CONCURRENCY (+ EVENT#<id>)', notes: 'as Create a call without the slot: the call (`waiting_until`, due in the calls-due index every minute and at its deadline), its FIFO entry (attribute_not_exists), ADD queued 1 conditioned on the limit being reached or calls waiting (a slot freed meanwhile: the slot is tried again), call.queued' },
  { name: 'Queue position of a waiting call', operation: 'Query', index: 'table', key: 'pk = ORG, sk BETWEEN CALLWAIT# AND CALLWAIT#<id>', notes: 'Select COUNT, strongly consistent: the calls waiting ahead of it, and itself' },
  { name: 'Place the oldest waiting call (after a slot frees; the recovery sweep)', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CALL#<id> + CALLWAIT#<id> + CONCURRENCY + SLOT#<id>', notes: 'after GetItem CONCURRENCY (nothing when `queued` is 0) and a Query of the first CALLWAIT# entry (Limit 1): the call updated conditioned on still waiting, the entry deleted, CONCURRENCY ADD total 1, queued -1 conditioned on a free slot, the slot put; then call-place' },
  { name: 'Read or set the concurrency limit', operation: 'UpdateItem', index: 'table', key: 'pk = ORG, sk = CONCURRENCY', notes: 'GET /concurrency is one strongly consistent GetItem; PATCH sets `limit` conditioned on the `ceiling` read; the admin command sets `ceiling` (and lowers `limit` to it)' },
  { name: 'Claim a dial / store the carrier call id', operation: 'UpdateItem', index: 'table', key: 'pk = ORG, sk = CALL#<id>', notes: 'dial_claimed_at conditioned on status queued and not yet claimed: at most one dial per call' },
  { name: 'Store a call analysis', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CALL#<id> + EVENT#<id>', notes: 'analysis set only while null, with the call.analyzed event; a failure sets analysis_error' },
  { name: 'Is a minute sweep due (every sweep, every minute)', operation: 'GetItem', index: 'table', key: 'pk = SWEEP#<job>, sk = NEXT', notes: 'one read an idle minute; the sweep reads its index only once `next_due_at` has come' },
  { name: 'Lower a sweep\'s marker (after writing an entry due earlier)', operation: 'UpdateItem', index: 'table', key: 'pk = SWEEP#<job>, sk = NEXT', notes: 'conditioned on `next_due_at` > the entry\'s due time (a new call, a webhook job, a lost fan-out); the sweep itself sets it to its horizon before reading and lowers it after' },
  { name: 'Calls due for recovery (call-recovery job)', operation: 'Query', index: 'gsi2', key: 'gsi2pk = CALLDUE#<YYYY-MM-DDTHH>#<shard>, gsi2sk < <horizon>$', notes: 'sparse: calls not ended or not finalized, gsi2sk = <due_at>#<org>#<id>, and relay connections\' due entries (`<due_at>#relay#<connection id>`; `$disconnect` deletes them); 4 shards per hour, 6 hours back to 1 ahead, only when the marker has come; pages of 50, then each due call read consistently' },
  { name: 'Start a chat', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CHAT#<id> + pk = ORG#<org>#CHAT#<id>, sk = MSG#000000 + EVENT#<id>', notes: 'chat put (gsi1 status, gsi2 idle entry), the opening message, chat.started, the contact\'s activity; + COUNT#chats' },
  { name: 'Get a chat', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = CHAT#<id>', notes: 'strongly consistent; a turn reads it with its draft agent in one BatchGetItem once the function knows the chat\'s agent (a published version is held in memory), and its messages unless the function holds them (1 read request a warm turn, at most 3)' },
  { name: 'A chat\'s messages', operation: 'Query', index: 'table', key: 'pk = ORG#<org>#CHAT#<id>, begins_with(sk, MSG#)', notes: 'in order, strongly consistent, in parallel with the chat, pages opened; merged with the chat\'s `latest_messages` by sequence number (read again when the two reads straddled a filing). Skipped when the function holds the chat\'s filed messages up to its `filed_count` (they never change)' },
  { name: 'Claim a chat turn', operation: 'UpdateItem', index: 'table', key: 'pk = ORG, sk = CHAT#<id>', notes: 'only a turn that can run a tool, streams, answers tool results or continues a kept turn: SET turn_claim, turn_claim_until = now + 30 s, conditioned on message_count and status as read and no live claim (`turn_claim_until < now`): of two racing turns the second is a 409 before it runs anything; released by the turn\'s write (or by a conditional REMOVE when it stores nothing)' },
  { name: 'A chat turn', operation: 'UpdateItem', index: 'table', key: 'pk = ORG, sk = CHAT#<id>', notes: 'a turn that ends nothing and whose new messages fit in 2 KiB (with the unfiled ones, else those are filed first): the chat conditioned on message_count, status and its own `turn_claim` (a turn without a claim: no live claim), REMOVE the claim, the messages appended to `latest_messages`. A turn whose model failed after its tools ran writes the same way with `incomplete_turn` set' },
  { name: 'File a chat\'s latest messages', operation: 'PutItem', index: 'table', key: 'pk = ORG#<org>#CHAT#<id>, sk = MSG#<first seq>', notes: 'one page item holding them: before a turn whose messages no longer fit with them on the chat (that turn\'s UpdateItem then holds only its own), and before a large or ending turn\'s transaction' },
  { name: 'A large or ending chat turn', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CHAT#<id> + pk = ORG#<org>#CHAT#<id>, sk = MSG#<seq>…', notes: 'the chat as above, REMOVE `latest_messages` (filed first); each new message put if absent; chat.ended when the agent ends it' },
  { name: 'List chats', operation: 'Query', index: 'table', key: 'pk = ORG, sk BETWEEN CHAT#<from id> AND CHAT#<to id>', notes: 'newest first; agent_id, contact_id, channel as filters; total from COUNT#chats without filters, else Select COUNT over the same range' },
  { name: 'List chats by status', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#CHAT#STATUS#<status>, gsi1sk BETWEEN <from id> AND <to id>', notes: 'gsi1pk moved by every status change; total by Select COUNT' },
  { name: 'Agent deletions left unfinished (agent-test-sweep job)', operation: 'Query', index: 'gsi2', key: 'gsi2pk = AGENTDELETION#<shard 0..7>, gsi2sk < <now − 15 min>', notes: 'sparse: tombstones only; each one\'s agent-cleanup message queued again' },
  { name: 'A deleted agent\'s partition, a page (agent-cleanup job)', operation: 'Query', index: 'table', key: 'pk = ORG#AGENT#<id>', notes: 'keys only, 500 per message, deleted with BatchWriteItem; the next message continues' },
  { name: 'Expired agent test runs (agent-test-sweep job)', operation: 'Query', index: 'gsi2', key: 'gsi2pk = TESTRUNOPEN#<shard 0..7>, gsi2sk < <now>', notes: 'sparse: runs not completed, gsi2sk = <expires at>#<org>#<agent>#<run>; each missing result written as an error, then the run completed (which removes the entry)' },
  { name: 'Idle chats (chat-sweep job)', operation: 'Query', index: 'gsi2', key: 'gsi2pk = CHATIDLE#<shard 0..7>, gsi2sk < <now>$', notes: 'sparse: open chats only, gsi2sk = <idle at>#<org>#<id>; each chat read and ended conditioned on what was read' },
  { name: 'Store a chat analysis', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CHAT#<id> + EVENT#<id>', notes: 'analysis set only while null, with the chat.analyzed event; a failure sets analysis_error' },
  { name: 'Count a conversation in the analytics', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CALL#<id> or CHAT#<id> + pk = ORG#<org>#STATS#<agent id|ALL>#<call|chat|ALL>, sk = DAY#<YYYY-MM-DD> and HOUR#<YYYY-MM-DDTHH> (4 + 4 items)', notes: 'the analysis job, before it analyses (the end) and after (the analysis), and a corrected duration: SET stats_counted on the conversation conditioned on its version as read, ADD the difference to the four day counters and their four hour counters; nothing to write when they already hold it' },
  { name: 'Analyse a conversation again', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CALL#<id> or CHAT#<id> + EVENT#<id> + pk = ORG#<org>#STATS#…, sk = DAY#<day> and HOUR#<hour> (4 + 4 items)', notes: 'POST /calls/{id}/analysis, POST /chats/{id}/analysis: the new analysis and stats_counted conditioned on the version as read, call.analyzed / chat.analyzed, the old analysis\' counts moved to the new one\'s' },
  { name: 'Conversation analytics', operation: 'Query', index: 'table', key: 'pk = ORG#<org>#STATS#<agent id|ALL~0..3 and ALL>#<call|chat|openai|ALL>, sk BETWEEN DAY#<from> AND DAY#<to>', notes: 'GET /analytics/conversations: one Query (an agent) or five in parallel (all agents: the shards and ALL), each of at most 366 small items, whatever the number of conversations; summed per day or week' },
  { name: 'Conversation analytics in a time zone', operation: 'Query', index: 'table', key: 'pk = ORG#<org>#STATS#<agent id|ALL~0..3>#<call|chat|ALL>, sk BETWEEN HOUR#<first UTC hour of the local from> AND HOUR#<last of the local to>', notes: 'GET /analytics/conversations?timezone=<IANA, not UTC>: one Query (an agent) or four in parallel (the shards), each of at most 24 items per day of the window; each hour summed into the local day its middle falls on (Intl, so DST is the zone\'s)' },
];

/** The markdown table of the access patterns. */
export function accessPatternTable(): string {
  const rows = accessPatterns.map((p) => `| ${p.name} | ${p.operation} | ${p.index} | \`${p.key}\` | ${p.notes} |`);
  return ['| access pattern | operation | index | key condition | notes |', '|---|---|---|---|---|', ...rows].join('\n');
}
