/**
 * Every access pattern of the table, named, with its key condition. docs/data-model.md is
 * generated from this list (`npm run docs:data-model`) and a test keeps the two in step, so
 * a new pattern cannot ship undocumented. `ORG` stands for `ORG#<organizationId>`.
 */
export interface AccessPattern {
  name: string;
  operation: 'GetItem' | 'ConditionCheck' | 'Query' | 'TransactWriteItems' | 'PutItem' | 'UpdateItem' | 'DeleteItem';
  index: 'table' | 'gsi1' | 'gsi2';
  key: string;
  notes: string;
}

export const accessPatterns: AccessPattern[] = [
  { name: 'Authenticate an API key', operation: 'GetItem', index: 'table', key: 'pk = KEYHASH#<sha256(key)>, sk = KEYHASH', notes: 'the only global item read per request; cached in memory for API_KEY_CACHE_SECONDS' },
  { name: 'Get an organization', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = ORG', notes: '' },
  { name: 'List organizations (admin)', operation: 'Query', index: 'table', key: 'pk = DIRECTORY#ORGS', notes: 'admin command only' },
  { name: 'Count a collection', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = COUNT#<collection>', notes: 'counter `n`, written in the same transaction as the items it counts' },
  { name: 'List API keys', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, APIKEY#)', notes: 'never returns the hash' },
  { name: 'Get an agent', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = AGENT#<id>', notes: '' },
  { name: 'List agents', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, AGENT#)', notes: 'UUID v7 ids sort by creation time' },
  { name: 'List agents by status', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#AGENT#STATUS#<status>', notes: 'total from COUNT#agents#status#<status>' },
  { name: 'Agents selecting a tool (tool delete)', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, AGENT#)', notes: 'projected to id, selected_tools, version; only on tool deletion' },
  { name: 'Numbers answered by an agent (agent delete)', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, PHONE#)', notes: 'projected to id, inbound_agent_id; only on agent deletion' },
  { name: 'Get a tool', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = TOOL#<id>', notes: '' },
  { name: 'List tools', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, TOOL#)', notes: '' },
  { name: 'Get widget settings', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = WIDGET#<id>', notes: '' },
  { name: 'List widget settings', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, WIDGET#)', notes: '' },
  { name: 'Public widget config', operation: 'Query', index: 'gsi2', key: 'gsi2pk = WIDGET#<id>', notes: 'the widget item (gsi2sk = WIDGET) and its agents (gsi2sk = AGENT#<id>) in one query, no API key' },
  { name: 'Referenced knowledge base exists', operation: 'ConditionCheck', index: 'table', key: 'pk = ORG, sk = KB#<id>', notes: 'inside the agent write that references it' },
  { name: 'Claim / replay an Idempotency-Key', operation: 'PutItem', index: 'table', key: 'pk = ORG, sk = IDEM#<operationId>#<key>', notes: 'conditional put; expires through `ttl` after 24 h' },
  { name: 'Get a phone number', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = PHONE#<id>', notes: 'bought and imported numbers alike; `source` tells them apart' },
  { name: 'List phone numbers', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, PHONE#)', notes: 'released numbers stay listed with status `released`; total from COUNT#phone-numbers' },
  { name: 'List phone numbers by status', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#PHONE_NUMBER#STATUS#<status>', notes: 'total from COUNT#phone-numbers#status#<status>' },
  { name: 'Claim an E.164 number (buy, import)', operation: 'TransactWriteItems', index: 'table', key: 'pk = NUMBER#<e164>, sk = NUMBER', notes: 'attribute_not_exists, in the transaction that writes PHONE#<id> (and the charge): one holder per number' },
  { name: 'Find who holds a number (inbound call)', operation: 'GetItem', index: 'table', key: 'pk = NUMBER#<e164>, sk = NUMBER', notes: 'organization and number id of the holder' },
  { name: 'Release a phone number', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = PHONE#<id>; pk = NUMBER#<e164>, sk = NUMBER', notes: 'status active → released only while `in_use` is 0; deletes the claim; removes `next_renewal_at` and gsi2 (billing stops)' },
  { name: 'Referenced inbound agent exists', operation: 'ConditionCheck', index: 'table', key: 'pk = ORG, sk = AGENT#<id>', notes: 'inside the phone number write that sets inbound_agent_id' },
  { name: 'List billing charges', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, CHARGE#)', notes: 'UUID v7 ids sort by time; written in the transaction that causes the charge; total from COUNT#charges' },
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
  { name: 'Is a number on the do-not-call list (dialBlock, phone filter)', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = DNC#<e164>', notes: 'strongly consistent: the call job checks right before dialing' },
  { name: 'List the do-not-call list', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, DNC#)', notes: 'in E.164 order; total from COUNT#dnc' },
  { name: 'Remove a number from the do-not-call list', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = DNC#<e164>', notes: 'delete with attribute_exists + COUNT#dnc −1; a failed condition is a 404' },
  // Calls
  { name: 'Create a call', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CALL#<id> + CALLIDX#agent|campaign|contact#<value>#<id>', notes: 'call put with gsi1 (status) and gsi2 (calls-due entry); one index entry per set filter member (they never change); + COUNT#calls' },
  { name: 'Get a call', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = CALL#<id>', notes: 'recording_url presigned on every read' },
  { name: 'List calls', operation: 'Query', index: 'table', key: 'pk = ORG, sk BETWEEN CALL#<from id> AND CALL#<to id>', notes: 'newest first; UUID v7 ids bound the created-time range; total from COUNT#calls without filters, else Select COUNT over the same range' },
  { name: 'List calls by status', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#CALL#STATUS#<status>, gsi1sk BETWEEN <from id> AND <to id>', notes: 'gsi1pk moved by every state change; agent/campaign/contact as filters; total by Select COUNT' },
  { name: 'List calls by agent / campaign / contact', operation: 'Query', index: 'table', key: 'pk = ORG, sk BETWEEN CALLIDX#<dim>#<value>#<from id> AND …#<to id>', notes: 'contact, else campaign, else agent is the range; the others as filters; calls then read with BatchGetItem; total by Select COUNT' },
  { name: 'Move a call (state machine)', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CALL#<id> (+ EVENT#<id>, CHARGE#<id from call>)', notes: 'conditioned on status_rank < the new rank (never backwards, duplicates change nothing); call.started / call.ended events; the minutes charge and COUNT#charges with the end' },
  { name: 'Claim a dial / store the carrier call id', operation: 'UpdateItem', index: 'table', key: 'pk = ORG, sk = CALL#<id>', notes: 'dial_claimed_at conditioned on status queued and not yet claimed: at most one dial per call' },
  { name: 'Store a call analysis', operation: 'TransactWriteItems', index: 'table', key: 'pk = ORG, sk = CALL#<id> + EVENT#<id>', notes: 'analysis set only while null, with the call.analyzed event; a failure sets analysis_error' },
  { name: 'Calls due for recovery (call-recovery job)', operation: 'Query', index: 'gsi2', key: 'gsi2pk = CALLDUE#<YYYY-MM-DDTHH>#<shard>, gsi2sk < <now>$', notes: 'sparse: calls not ended, gsi2sk = <due_at>#<org>#<id>; 4 shards per hour, the last 6 hours; keys only, then each call read consistently' },
];

/** The markdown table of the access patterns. */
export function accessPatternTable(): string {
  const rows = accessPatterns.map((p) => `| ${p.name} | ${p.operation} | ${p.index} | \`${p.key}\` | ${p.notes} |`);
  return ['| access pattern | operation | index | key condition | notes |', '|---|---|---|---|---|', ...rows].join('\n');
}
