import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { v7 as uuidv7 } from 'uuid';
import { getOr404, listCollection, requireSomeField } from '../common/collection';
import { phoneRules } from '../common/phone-field';
import { collections, keys, Prefix, type Key } from '../../db/keys';
import { ConditionFailed, deleteExisting, getItem, putNew, queryPage, stripKeys, transact, updateExisting, type PageRequest } from '../../db/store';
import { countRange, deleteItem, deletePartition, getMany, putItem, queryRange, queryRangePage, type RangeQuery } from '../../db/filtered-query';
import { ConflictError, NotFoundError } from '../../errors';
import { listResult } from '../common/list-result';
import { activityPut, statsBump } from './history';
import { contactDefaults, type Activity, type Contact, type ContactInput, type ContactStats, type Note } from './schemas';

type Stats = Omit<ContactStats, 'last_call_at'> & { last_call_at?: string };
type ContactItem = Contact & Key & { version: number; stats: Stats };

const ENTITY = 'CONTACT';
/** The timeline answers with at most this many activities: the most recent ones, oldest first. */
export const MAX_ACTIVITIES = 1000;

const emptyStats = (): Stats => ({ total_calls: 0, answered_calls: 0, total_call_duration_sec: 0, appointments: 0, notes: 0 });
const isConflict = (err: unknown) => err instanceof ConditionFailed && err.message === 'transaction conflict';

function view(item: ContactItem): Contact {
  const { stats, ...rest } = stripKeys(item) as ContactItem;
  void stats;
  return rest as Contact;
}

/** The searchable form of a name: NFKC, lowercase, single spaces, no `#` (the key separator). */
export function searchToken(value: string): string {
  return value.normalize('NFKC').toLowerCase().replace(/#/g, ' ').replace(/\s+/g, ' ').trim();
}

interface SearchEntry extends Key {
  entity: 'CONTACT_SEARCH';
  contact_id: string;
  /** On a last-name entry: the first name, so a contact whose both names match is counted once. */
  first_lc?: string;
}

/**
 * The search entries of a contact: one per distinct first/last name (`name`), one for the full
 * name (`full`), its email and its phone. They are written, moved and deleted in the contact's
 * own transactions, so search never scans the organization's contacts.
 */
function searchEntries(orgId: string, c: Pick<Contact, 'id' | 'first_name' | 'last_name' | 'email' | 'phone'>): SearchEntry[] {
  const entry = (kind: string, value: string, extra: Partial<SearchEntry> = {}): SearchEntry => ({
    ...keys.contactSearch(orgId, kind, value, c.id),
    entity: 'CONTACT_SEARCH',
    contact_id: c.id,
    ...extra,
  });
  const first = searchToken(c.first_name);
  const last = searchToken(c.last_name);
  const out: SearchEntry[] = [];
  if (first) out.push(entry('name', first));
  if (last && last !== first) out.push(entry('name', last, first ? { first_lc: first } : {}));
  const full = [first, last].filter(Boolean).join(' ');
  if (full) out.push(entry('full', full));
  if (c.email) out.push(entry('email', c.email));
  if (c.phone) out.push(entry('phone', c.phone));
  return out;
}

const sameEntry = (a: SearchEntry, b: SearchEntry) => a.sk === b.sk && a.first_lc === b.first_lc;

/** A new contact and the items that store it: the contact item (with empty stats) and its search entries. */
export function newContactItems(orgId: string, input: ContactInput, now: string): { contact: Contact; items: Record<string, unknown>[] } {
  const contact: Contact = { id: uuidv7(), ...contactDefaults, ...input, created_at: now, updated_at: now } as Contact;
  const item = { ...keys.contact(orgId, contact.id), entity: ENTITY, version: 1, ...contact, stats: emptyStats() };
  return { contact, items: [item, ...searchEntries(orgId, contact).map((e) => ({ ...e }))] };
}

export async function createContact(orgId: string, input: ContactInput): Promise<Contact> {
  const { contact, items: [item, ...entries] } = newContactItems(orgId, input, new Date().toISOString());
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      await transact(
        [putNew(item!), ...entries.map((e) => putItem(e))],
        [{ orgId, collection: collections.contacts, delta: 1 }],
      );
      return contact;
    } catch (err) {
      // A fresh id never exists: a failure is a conflict on the counter.
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
    }
  }
  throw new ConflictError('Too many concurrent changes to the organization\'s contacts; retry');
}

async function getContactItem(orgId: string, id: string): Promise<ContactItem> {
  return getOr404<ContactItem>(keys.contact(orgId, id), 'Contact', id);
}

export async function getContact(orgId: string, id: string): Promise<Contact> {
  return view(await getContactItem(orgId, id));
}

export function listContacts(orgId: string, query: PageRequest) {
  return listCollection(orgId, Prefix.contact, collections.contacts, query, view);
}

/**
 * A partial update. Search entries follow the changed name, email and phone: the entries that
 * no longer apply are deleted and the new ones put in the same transaction as the contact,
 * conditioned on the version read, so the index never disagrees with the contact.
 */
export async function updateContact(orgId: string, id: string, input: ContactInput): Promise<Contact> {
  requireSomeField(input);
  const key = keys.contact(orgId, id);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const item = await getContactItem(orgId, id);
    const current = view(item);
    const updated_at = new Date().toISOString();
    const next = { ...current, ...input, updated_at };
    const before = searchEntries(orgId, current);
    const after = searchEntries(orgId, next);
    const removed = before.filter((b) => !after.some((a) => a.sk === b.sk));
    const added = after.filter((a) => !before.some((b) => sameEntry(a, b)));
    try {
      await transact([
        updateExisting(key, { ...input, updated_at }, { condition: '#ver = :ver', names: { '#ver': 'version' }, values: { ':ver': item.version } }),
        ...removed.map((e) => deleteItem(e)),
        ...added.map((e) => putItem({ ...e })),
      ]);
      return next;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
    }
  }
  throw new ConflictError('The contact is being changed by other requests; retry', { id });
}

/**
 * Deletes the contact and its search entries in one transaction, then its history partition
 * (notes, activities, calls) in batches of 25. Once the contact item is gone no write can add
 * to that history (every history write is conditioned on the contact existing).
 */
export async function deleteContact(orgId: string, id: string): Promise<void> {
  const key = keys.contact(orgId, id);
  for (let attempt = 0; ; attempt++) {
    const item = await getContactItem(orgId, id);
    try {
      await transact(
        [deleteExisting(key, '#ver = :ver', { ':ver': item.version }, { '#ver': 'version' }), ...searchEntries(orgId, view(item)).map((e) => deleteItem(e))],
        [{ orgId, collection: collections.contacts, delta: -1 }],
      );
      break;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (attempt + 1 >= MAX_ATTEMPTS) throw new ConflictError('The contact is being changed by other requests; retry', { id });
      await pause(attempt);
    }
  }
  await deletePartition(keys.contactHistory(orgId, id));
}

/** How `q` is read: an email when it has `@`, a phone when it is a valid E.164 number, else a name prefix. */
export async function searchPlan(orgId: string, q: string): Promise<RangeQuery> {
  const base = { pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk' };
  const raw = q.trim();
  if (raw.includes('@')) return { ...base, skPrefix: keys.contactSearchPrefix('email', raw.toLowerCase(), true) };
  const phone = /^[+\d][\d\s\-().]*$/.test(raw) ? (await phoneRules()).tryNormalizeE164(raw.startsWith('+') ? raw : `+${raw}`) : undefined;
  if (phone) return { ...base, skPrefix: keys.contactSearchPrefix('phone', phone, true) };
  const token = searchToken(raw);
  if (token.includes(' ')) return { ...base, skPrefix: keys.contactSearchPrefix('full', token, false) };
  return {
    ...base,
    skPrefix: keys.contactSearchPrefix('name', token, false),
    // A last-name entry whose first name matches too is the same contact again: skip it.
    filter: { expression: 'attribute_not_exists(#first) OR NOT begins_with(#first, :q)', names: { '#first': 'first_lc' }, values: { ':q': token } },
  };
}

/**
 * Search by name prefix (first, last or "first last", case-insensitive), exact email or exact
 * phone. A page of index entries, then the contacts by key; `meta.total` counts the matching
 * entries (Select COUNT over the same key range and filter), each contact once.
 */
export async function searchContacts(orgId: string, query: PageRequest & { q: string }) {
  const plan = await searchPlan(orgId, query.q);
  const [page, total] = await Promise.all([queryRangePage<SearchEntry>(plan, query), countRange(plan)]);
  const contacts = await getMany<ContactItem>(page.items.map((e) => keys.contact(orgId, e.contact_id)));
  return listResult({ items: contacts.map(view), nextCursor: page.nextCursor }, total, query);
}

/** Adds a note; the note, its timeline entry and the `notes` counter land in one transaction. */
export async function addNote(orgId: string, contactId: string, content: string): Promise<Note> {
  const created_at = new Date().toISOString();
  const note: Note = { id: uuidv7(), contact_id: contactId, content, created_at };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      await transact([
        statsBump(orgId, contactId, { notes: 1 }),
        putNew({ ...keys.contactNote(orgId, contactId, note.id), entity: 'CONTACT_NOTE', ...note }),
        activityPut(orgId, contactId, 'note', `Note added: ${content}`, created_at),
      ]);
      return note;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (!isConflict(err)) throw new NotFoundError('Contact', contactId);
      await pause(attempt);
    }
  }
  throw new ConflictError('The contact is being changed by other requests; retry', { id: contactId });
}

function history(orgId: string, contactId: string, prefix: string) {
  return { pkName: 'pk', pkValue: keys.contactHistory(orgId, contactId), skName: 'sk', skPrefix: prefix };
}

/** Notes, oldest first; the total is the contact's `notes` counter. */
export async function listNotes(orgId: string, contactId: string, query: PageRequest) {
  const item = await getContactItem(orgId, contactId);
  const page = await queryPage<Note & Key>(history(orgId, contactId, keys.contactHistoryPrefix.note), query);
  return listResult({ items: page.items.map((n) => stripKeys(n) as Note), nextCursor: page.nextCursor }, item.stats?.notes ?? 0, query);
}

/** The timeline: the most recent MAX_ACTIVITIES entries, oldest first. */
export async function listActivities(orgId: string, contactId: string): Promise<Activity[]> {
  await getContactItem(orgId, contactId);
  const items = await queryRange<Activity & Key>({ ...history(orgId, contactId, keys.contactHistoryPrefix.activity), descending: true }, MAX_ACTIVITIES);
  return items.reverse().map((a) => ({ type: a.type, description: a.description, timestamp: a.timestamp }));
}

export async function getContactStats(orgId: string, contactId: string): Promise<ContactStats> {
  const { stats } = await getContactItem(orgId, contactId);
  return {
    total_calls: stats?.total_calls ?? 0,
    answered_calls: stats?.answered_calls ?? 0,
    total_call_duration_sec: stats?.total_call_duration_sec ?? 0,
    last_call_at: stats?.last_call_at ?? null,
    appointments: stats?.appointments ?? 0,
    notes: stats?.notes ?? 0,
  };
}

/** A contact, or undefined; other areas use it to fill attendee details and guard references. */
export async function findContact(orgId: string, contactId: string): Promise<Contact | undefined> {
  const item = await getItem<ContactItem>(keys.contact(orgId, contactId));
  return item ? view(item) : undefined;
}
