import { v7 as uuidv7 } from 'uuid';
import { recordContactCall } from '../../shared/domain/contacts/calls';
import { CreateContactBody } from '../../shared/domain/contacts/schemas';
import {
  addNote,
  createContact,
  deleteContact,
  getContactStats,
  listActivities,
  listNotes,
  searchContacts,
  updateContact,
} from '../../shared/domain/contacts/service';
import { listContactCalls } from '../../shared/domain/contacts/calls';
import { NotFoundError } from '../../shared/errors';

const page = { limit: 20, offset: 0 };
const make = (org: string, body: object) => createContact(org, CreateContactBody.parse(body));

describe('contact search', () => {
  it('finds by name prefix (first, last, full), exact email and exact phone with exact totals', async () => {
    // Prepare
    const org = uuidv7();
    const both = await make(org, { first_name: 'Anna', last_name: 'Annabel', email: 'anna@example.com', phone: '+14155550123' });
    const last = await make(org, { first_name: 'Bob', last_name: 'Annerl' });
    await make(org, { first_name: 'Carl', last_name: 'Smith', email: 'carl@example.com' });
    // Act
    const ann = await searchContacts(org, { ...page, q: 'ANN' });
    const full = await searchContacts(org, { ...page, q: 'bob  annerl' });
    const email = await searchContacts(org, { ...page, q: 'Anna@Example.com' });
    const phone = await searchContacts(org, { ...page, q: '+1 415-555-0123' });
    const none = await searchContacts(org, { ...page, q: 'zzz' });
    // Assess
    expect(ann.meta.total).toBe(2);
    expect(ann.items.map((c) => c.id).sort()).toEqual([both.id, last.id].sort());
    expect(full.items.map((c) => c.id)).toEqual([last.id]);
    expect(email.meta.total).toBe(1);
    expect(phone.items.map((c) => c.id)).toEqual([both.id]);
    expect(none.meta.total).toBe(0);
  });

  it('moves index entries on update and removes them on delete', async () => {
    const org = uuidv7();
    const c = await make(org, { first_name: 'Dora', email: 'dora@example.com' });
    await updateContact(org, c.id, { first_name: 'Eve', email: 'eve@example.com' });
    expect((await searchContacts(org, { ...page, q: 'dora' })).meta.total).toBe(0);
    expect((await searchContacts(org, { ...page, q: 'dora@example.com' })).meta.total).toBe(0);
    expect((await searchContacts(org, { ...page, q: 'eve' })).meta.total).toBe(1);
    await addNote(org, c.id, 'hello');
    await deleteContact(org, c.id);
    expect((await searchContacts(org, { ...page, q: 'eve' })).meta.total).toBe(0);
    await expect(listActivities(org, c.id)).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('contact history', () => {
  it('keeps the timeline in time order and counts notes', async () => {
    const org = uuidv7();
    const c = await make(org, { first_name: 'Tim' });
    for (const text of ['one', 'two', 'three']) await addNote(org, c.id, text);
    const timeline = await listActivities(org, c.id);
    expect(timeline.map((a) => a.description)).toEqual(['Note added: one', 'Note added: two', 'Note added: three']);
    expect((await listNotes(org, c.id, page)).meta.total).toBe(3);
    expect((await getContactStats(org, c.id)).notes).toBe(3);
  });

  it('records calls once each, in stats, history and timeline; last_call_at only moves forward', async () => {
    const org = uuidv7();
    const c = await make(org, { first_name: 'Cal' });
    const call = (id: string, started_at: string, answered: boolean, duration_sec: number) => ({
      id, status: answered ? 'completed' : 'no_answer', answered, duration_sec, started_at, from_phone_number: '+14155550100', to_phone_number: '+14155550123',
    });
    const first = uuidv7();
    expect(await recordContactCall(org, c.id, call(first, '2030-01-02T10:00:00.000Z', true, 42))).toEqual({ recorded: true });
    expect(await recordContactCall(org, c.id, call(first, '2030-01-02T10:00:00.000Z', true, 42))).toEqual({ recorded: false });
    await recordContactCall(org, c.id, call(uuidv7(), '2030-01-01T10:00:00.000Z', false, 0));
    const stats = await getContactStats(org, c.id);
    expect(stats).toEqual({ total_calls: 2, answered_calls: 1, total_call_duration_sec: 42, last_call_at: '2030-01-02T10:00:00.000Z', appointments: 0, notes: 0 });
    const calls = await listContactCalls(org, c.id, page);
    expect(calls.meta.total).toBe(2);
    const timeline = await listActivities(org, c.id);
    expect(timeline.map((a) => a.timestamp)).toEqual(['2030-01-01T10:00:00.000Z', '2030-01-02T10:00:00.000Z']);
    expect(timeline.every((a) => a.type === 'call')).toBe(true);
    await expect(recordContactCall(org, uuidv7(), call(uuidv7(), '2030-01-01T10:00:00.000Z', true, 1))).rejects.toBeInstanceOf(NotFoundError);
  });
});
