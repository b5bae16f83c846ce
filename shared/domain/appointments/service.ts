import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { v7 as uuidv7 } from 'uuid';
import { getOr404, listCollection } from '../common/collection';
import { collections, gsi1, gsi2, keys, Prefix, type Key } from '../../db/keys';
import { ConditionFailed, getItem, putNew, stripKeys, transact, updateExisting, type Guard } from '../../db/store';
import { countRange, deleteItem, putItem, queryRange, queryRangePage, type RangeQuery } from '../../db/filtered-query';
import { ConflictError, NotFoundError, UnprocessableError, ValidationError } from '../../errors';
import { listResult } from '../common/list-result';
import { activityPut, statsBump } from '../contacts/history';
import { findContact } from '../contacts/service';
import { dispatchEvents, newEvent } from '../events/publish';
import { connectedProvider, providerError, verifyCalcomSignature } from '../scheduling/integration';
import { findWorkingHours } from '../scheduling/working-hours';
import { bucketsOf, MAX_DURATION_MINUTES, MAX_RANGE_DAYS, onBucketGrid } from '../scheduling/buckets';
import { iso } from '../scheduling/time';
import type { ExternalBooking, SchedulingProvider } from '../../adapters/scheduling/port';
import type { Appointment, AppointmentListInput, AvailabilityInput, BookAppointmentInput, RescheduleInput } from './schemas';

type AppointmentItem = Appointment & Key & { version: number };

const ENTITY = 'APPOINTMENT';

/**
 * Dates in a time zone (luxon, about 70 KB), loaded on first use: reading, listing and canceling
 * appointments never need them; availability loads them at cold start (its entry imports them).
 */
const zonedDates = async () => {
  const [slots, zoned] = await Promise.all([import('../scheduling/slots'), import('../scheduling/zoned')]);
  return { ...slots, ...zoned };
};
const MINUTE = 60_000;
const isConflict = (err: unknown) => err instanceof ConditionFailed && err.message === 'transaction conflict';

/** The contact vanished between our read and the write: write again without its timeline entry. */
class ContactGone extends Error {}

function view(item: AppointmentItem): Appointment {
  return stripKeys(item) as Appointment;
}

const when = (at: string) => at.replace(/:00\.000Z$/, 'Z').replace('T', ' ');

function agentGuard(orgId: string, agentId: string): Guard {
  return { key: keys.agent(orgId, agentId), onFail: () => ValidationError.field('agent_id', `agent ${agentId} does not exist in this organization`) };
}

async function requireAgent(orgId: string, agentId: string): Promise<void> {
  if (!(await getItem(keys.agent(orgId, agentId)))) throw ValidationError.field('agent_id', `agent ${agentId} does not exist in this organization`);
}

function itemOf(orgId: string, a: Appointment) {
  return {
    ...keys.appointment(orgId, a.id),
    entity: ENTITY,
    version: 1,
    gsi1pk: gsi1.appointmentsOfAgent(orgId, a.agent_id),
    gsi1sk: `${a.start_time}#${a.id}`,
    gsi2pk: gsi2.appointmentsByStart(orgId),
    gsi2sk: `${a.start_time}#${a.id}`,
    ...a,
  };
}

/** Slot locks of a built-in appointment; they expire a week after it ends to keep the table tidy. */
function lockPuts(orgId: string, a: Appointment) {
  const ttl = Math.floor(Date.parse(a.end_time) / 1000) + 7 * 86_400;
  return bucketsOf(Date.parse(a.start_time), a.duration_minutes).map((b) =>
    putNew({ ...keys.agentSlot(orgId, a.agent_id, b), entity: 'AGENT_SLOT', appointment_id: a.id, ttl }),
  );
}

/** Frees a lock only while it still belongs to this appointment. */
function lockDelete(orgId: string, agentId: string, bucket: string, appointmentId: string) {
  return deleteItem(keys.agentSlot(orgId, agentId, bucket), { expression: 'attribute_not_exists(pk) OR appointment_id = :appt', values: { ':appt': appointmentId } });
}

/** A timeline entry for the appointment's contact, guarded so it is never written to a deleted contact. */
async function contactEntry(orgId: string, contactId: string | null, description: string, at: string, skip: boolean) {
  if (!contactId || skip || !(await findContact(orgId, contactId))) return { items: [], guards: [] as Guard[] };
  return {
    items: [activityPut(orgId, contactId, 'appointment', description, at)],
    guards: [{ key: keys.contact(orgId, contactId), onFail: () => new ContactGone() }] as Guard[],
  };
}

function assertBookable(startMs: number, durationMinutes: number) {
  if (!onBucketGrid(startMs)) throw ValidationError.field('start_time', 'must be on a 5-minute boundary (seconds 0)');
  if (startMs < Date.now()) throw new UnprocessableError('The slot is in the past', { start_time: iso(startMs) });
  if (durationMinutes > MAX_DURATION_MINUTES) throw ValidationError.field('duration_minutes', `must be at most ${MAX_DURATION_MINUTES}`);
}

async function assertWithinHours(orgId: string, agentId: string, startMs: number, durationMinutes: number) {
  const hours = await findWorkingHours(orgId, agentId);
  if (hours && !(await zonedDates()).withinWorkingHours(startMs, startMs + durationMinutes * MINUTE, hours)) {
    throw new UnprocessableError('The slot is outside the agent\'s working hours', { agent_id: agentId, working_hours: { days: hours.days, start: hours.start, end: hours.end, timezone: hours.timezone } });
  }
}

// ---------------------------------------------------------------------------------------------
// Availability

/** Free slots of an agent in [start, end) for a duration, shown in the requested time zone. */
export async function availability(orgId: string, q: AvailabilityInput) {
  const { resolveBoundary, freeSlots, slotView } = await zonedDates();
  const from = resolveBoundary(q.start, q.timezone, false);
  const to = resolveBoundary(q.end, q.timezone, true);
  if (to <= from) throw ValidationError.field('end', 'must be after start');
  if (to.diff(from, 'days').days > MAX_RANGE_DAYS) throw ValidationError.field('end', `must be at most ${MAX_RANGE_DAYS} days after start`);
  await requireAgent(orgId, q.agent_id);
  const base = { agent_id: q.agent_id, timezone: q.timezone, duration_minutes: q.duration_minutes, start: from.setZone(q.timezone).toISO()!, end: to.setZone(q.timezone).toISO()! };
  const provider = await connectedProvider(orgId);
  if (provider) {
    let starts: string[];
    try {
      starts = await provider.slots({ start: from.toISO()!, end: to.toISO()!, timeZone: q.timezone, durationMinutes: q.duration_minutes });
    } catch (err) {
      throw providerError(err, 'list slots');
    }
    const slots = starts
      .map((s) => Date.parse(s))
      .filter((s) => s >= from.toMillis() && s + q.duration_minutes * MINUTE <= to.toMillis())
      .sort((a, b) => a - b)
      .map((s) => slotView({ start: s, end: s + q.duration_minutes * MINUTE }, q.timezone));
    return { ...base, provider: 'calcom' as const, slots };
  }
  const [busy, hours] = await Promise.all([busyIntervals(orgId, q.agent_id, from.toMillis(), to.toMillis()), findWorkingHours(orgId, q.agent_id)]);
  const slots = freeSlots({ from: from.toMillis(), to: to.toMillis(), durationMinutes: q.duration_minutes, busy, workingHours: hours, now: Date.now() });
  return { ...base, provider: 'builtin' as const, slots: slots.map((s) => slotView(s, q.timezone)) };
}

/** The agent's accepted appointments that can overlap [from, to): those starting up to the longest duration before. */
async function busyIntervals(orgId: string, agentId: string, from: number, to: number) {
  const items = await queryRange<AppointmentItem>(
    {
      index: 'gsi1',
      pkName: 'gsi1pk',
      pkValue: gsi1.appointmentsOfAgent(orgId, agentId),
      skName: 'gsi1sk',
      skFrom: iso(from - MAX_DURATION_MINUTES * MINUTE),
      skTo: iso(to),
      filter: { expression: '#st = :acc', names: { '#st': 'status' }, values: { ':acc': 'accepted' } },
    },
    10_000,
  );
  return items.map((a) => ({ start: Date.parse(a.start_time), end: Date.parse(a.end_time) }));
}

// ---------------------------------------------------------------------------------------------
// Booking

/**
 * Books an appointment. Built-in: the appointment and one lock per 5-minute bucket it covers
 * (attribute_not_exists) land in one transaction with the agent guard, the contact's timeline
 * entry and `appointments` counter, so of any number of racing bookings of overlapping time
 * exactly one lands; the others answer 422. With Cal.com connected, Cal.com books first (it
 * refuses taken slots: 422) and our copy carries its uid.
 */
export async function bookAppointment(orgId: string, input: BookAppointmentInput): Promise<Appointment> {
  const startMs = Date.parse(input.start_time);
  assertBookable(startMs, input.duration_minutes);
  const contact = input.contact_id ? await findContact(orgId, input.contact_id) : undefined;
  if (input.contact_id && !contact) throw ValidationError.field('contact_id', `contact ${input.contact_id} does not exist in this organization`);
  const attendee_name = input.attendee_name ?? ([contact?.first_name, contact?.last_name].filter(Boolean).join(' ') || undefined);
  if (!attendee_name) throw ValidationError.field('attendee_name', 'is required (or give a contact_id whose contact has a name)');
  const now = new Date().toISOString();
  const appointment: Appointment = {
    id: uuidv7(),
    organization_id: orgId,
    agent_id: input.agent_id,
    contact_id: input.contact_id ?? null,
    scheduler_booking_uid: '',
    provider: 'builtin',
    attendee_name,
    attendee_email: input.attendee_email ?? contact?.email ?? '',
    attendee_phone: input.attendee_phone ?? contact?.phone ?? '',
    attendee_timezone: input.attendee_timezone ?? (contact?.timezone || 'UTC'),
    start_time: iso(startMs),
    end_time: iso(startMs + input.duration_minutes * MINUTE),
    duration_minutes: input.duration_minutes,
    meeting_url: '',
    status: 'accepted',
    created_at: now,
    updated_at: now,
  };
  const provider = await connectedProvider(orgId);
  if (!provider) {
    await assertWithinHours(orgId, input.agent_id, startMs, input.duration_minutes);
    await writeBooking(orgId, appointment);
    return appointment;
  }
  await requireAgent(orgId, input.agent_id);
  if (!appointment.attendee_email) throw ValidationError.field('attendee_email', 'is required when Cal.com is connected');
  let booking: ExternalBooking;
  try {
    booking = await provider.book({
      start: appointment.start_time,
      durationMinutes: appointment.duration_minutes,
      attendee: { name: attendee_name, email: appointment.attendee_email, timeZone: appointment.attendee_timezone, ...(appointment.attendee_phone ? { phoneNumber: appointment.attendee_phone } : {}) },
      metadata: { appointment_id: appointment.id, agent_id: appointment.agent_id, organization_id: orgId, ...(appointment.contact_id ? { contact_id: appointment.contact_id } : {}) },
    });
  } catch (err) {
    throw providerError(err, 'book the slot');
  }
  const booked = withBooking(appointment, booking);
  try {
    await writeBooking(orgId, booked);
  } catch (err) {
    // Our copy could not be stored (the contact vanished…): do not leave a booking behind on Cal.com.
    await provider.cancel(booking.uid, 'Booking could not be recorded').catch(() => undefined);
    throw err;
  }
  return booked;
}

function withBooking(a: Appointment, b: ExternalBooking): Appointment {
  return {
    ...a,
    provider: 'calcom',
    scheduler_booking_uid: b.uid,
    start_time: b.start,
    end_time: b.end,
    duration_minutes: b.durationMinutes,
    meeting_url: b.meetingUrl,
    status: 'accepted',
  };
}

/** The one write of a new appointment (either provider). */
async function writeBooking(orgId: string, a: Appointment): Promise<void> {
  const builtin = a.provider === 'builtin';
  const published = newEvent(orgId, 'appointment.booked', a);
  let skipContact = false;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const entry = await contactEntry(orgId, a.contact_id, `Appointment booked for ${when(a.start_time)} (${a.duration_minutes} min)`, a.created_at, skipContact);
    const contactItems = entry.items.length ? [statsBump(orgId, a.contact_id!, { appointments: 1 }), ...entry.items] : [];
    try {
      await transact(
        [
          putNew(itemOf(orgId, a)),
          ...(builtin ? lockPuts(orgId, a) : [putItem({ ...keys.appointmentByBookingUid(orgId, a.scheduler_booking_uid), entity: 'APPOINTMENT_UID', appointment_id: a.id })]),
          ...contactItems,
          published.write,
        ],
        [{ orgId, collection: collections.appointments, delta: 1 }],
        // The stats update is itself conditioned on the contact existing (one operation per item).
        builtin ? [agentGuard(orgId, a.agent_id)] : [],
      );
      await dispatchEvents([published.event]);
      return;
    } catch (err) {
      if (err instanceof ContactGone) {
        skipContact = true;
        continue;
      }
      if (!(err instanceof ConditionFailed)) throw err;
      if (!isConflict(err)) {
        // A lock already held (or the contact deleted under us: its stats update failed).
        if (a.contact_id && contactItems.length && !(await findContact(orgId, a.contact_id))) {
          skipContact = true;
          continue;
        }
        throw new UnprocessableError('The slot is already taken for this agent', { agent_id: a.agent_id, start_time: a.start_time, end_time: a.end_time });
      }
      await pause(attempt, 250, 5);
    }
  }
  throw new ConflictError('Too many concurrent bookings; retry');
}

// ---------------------------------------------------------------------------------------------
// Reads

export async function getAppointment(orgId: string, id: string, orgIdQuery?: string): Promise<Appointment> {
  // The seed passes `org_id`; another organization's id answers as if the appointment did not exist.
  if (orgIdQuery && orgIdQuery.toLowerCase() !== orgId.toLowerCase()) throw new NotFoundError('Appointment', id);
  return view(await getOr404<AppointmentItem>(keys.appointment(orgId, id), 'Appointment', id));
}

/**
 * Without filters: the organization's appointments by creation, total from the counter. With
 * `agent_id` and/or `from`/`to`: a start-time range of an index (the agent's, or the
 * organization's), `status` as a filter, the total counted over the same range (Select COUNT).
 */
export async function listAppointments(orgId: string, q: AppointmentListInput) {
  if (!q.agent_id && !q.status && !q.from && !q.to) return listCollection(orgId, Prefix.appointment, collections.appointments, q, view);
  if (q.from && q.to && q.to <= q.from) throw ValidationError.field('to', 'must be after from');
  const range: RangeQuery = {
    ...(q.agent_id
      ? { index: 'gsi1' as const, pkName: 'gsi1pk', pkValue: gsi1.appointmentsOfAgent(orgId, q.agent_id), skName: 'gsi1sk' }
      : { index: 'gsi2' as const, pkName: 'gsi2pk', pkValue: gsi2.appointmentsByStart(orgId), skName: 'gsi2sk' }),
    ...(q.from || q.to ? { skFrom: q.from ?? '', skTo: q.to ?? '~' } : {}),
    ...(q.status ? { filter: { expression: '#st = :st', names: { '#st': 'status' }, values: { ':st': q.status } } } : {}),
  };
  const [page, total] = await Promise.all([queryRangePage<AppointmentItem>(range, q), countRange(range)]);
  return listResult({ items: page.items.map(view), nextCursor: page.nextCursor }, total, q);
}

async function accepted(orgId: string, id: string): Promise<AppointmentItem> {
  const item = await getOr404<AppointmentItem>(keys.appointment(orgId, id), 'Appointment', id);
  if (item.status !== 'accepted') throw new ConflictError(`Appointment is ${item.status}; only accepted appointments can change`, { id, status: item.status });
  return item;
}

async function providerFor(orgId: string, a: Appointment): Promise<SchedulingProvider | undefined> {
  if (a.provider !== 'calcom') return undefined;
  const provider = await connectedProvider(orgId);
  if (!provider) throw new UnprocessableError('This appointment was booked through Cal.com, which is no longer connected');
  return provider;
}

// ---------------------------------------------------------------------------------------------
// Reschedule and cancel

/**
 * Moves an appointment: the old booking becomes `rescheduled` (with `rescheduled_to`), a new
 * `accepted` one is created (with `rescheduled_from`) and returned. Built-in: locks the new
 * buckets, frees the old ones and hands shared buckets over, in one transaction (422 when taken).
 */
export async function rescheduleAppointment(orgId: string, id: string, input: RescheduleInput): Promise<Appointment> {
  const old = view(await accepted(orgId, id));
  const duration = input.duration_minutes ?? old.duration_minutes;
  const startMs = Date.parse(input.start_time);
  assertBookable(startMs, duration);
  const provider = await providerFor(orgId, old);
  const now = new Date().toISOString();
  let next: Appointment = {
    ...old,
    id: uuidv7(),
    start_time: iso(startMs),
    end_time: iso(startMs + duration * MINUTE),
    duration_minutes: duration,
    status: 'accepted',
    rescheduled_from: old.id,
    created_at: now,
    updated_at: now,
  };
  delete next.rescheduled_to;
  delete next.cancellation_reason;
  if (provider) {
    try {
      next = withBooking(next, await provider.reschedule(old.scheduler_booking_uid, { start: next.start_time, reason: input.reason }));
    } catch (err) {
      throw providerError(err, 'reschedule the booking');
    }
  } else {
    await assertWithinHours(orgId, old.agent_id, startMs, duration);
  }
  await writeReschedule(orgId, old, next);
  return next;
}

async function writeReschedule(orgId: string, old: Appointment, next: Appointment): Promise<void> {
  const builtin = old.provider === 'builtin';
  const oldBuckets = builtin ? bucketsOf(Date.parse(old.start_time), old.duration_minutes) : [];
  const newBuckets = builtin ? bucketsOf(Date.parse(next.start_time), next.duration_minutes) : [];
  const ttl = Math.floor(Date.parse(next.end_time) / 1000) + 7 * 86_400;
  const locks = [
    ...oldBuckets.filter((b) => !newBuckets.includes(b)).map((b) => lockDelete(orgId, old.agent_id, b, old.id)),
    ...newBuckets.filter((b) => !oldBuckets.includes(b)).map((b) => putNew({ ...keys.agentSlot(orgId, next.agent_id, b), entity: 'AGENT_SLOT', appointment_id: next.id, ttl })),
    ...newBuckets
      .filter((b) => oldBuckets.includes(b))
      .map((b) => updateExisting(keys.agentSlot(orgId, old.agent_id, b), { appointment_id: next.id, ttl }, { condition: '#appt = :old', names: { '#appt': 'appointment_id' }, values: { ':old': old.id } })),
  ];
  const published = newEvent(orgId, 'appointment.rescheduled', next);
  let skipContact = false;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const entry = await contactEntry(orgId, old.contact_id, `Appointment rescheduled from ${when(old.start_time)} to ${when(next.start_time)} (${next.duration_minutes} min)`, next.created_at, skipContact);
    try {
      await transact(
        [
          updateExisting(keys.appointment(orgId, old.id), { status: 'rescheduled', rescheduled_to: next.id, updated_at: next.created_at }, { condition: '#st = :acc', names: { '#st': 'status' }, values: { ':acc': 'accepted' } }),
          putNew(itemOf(orgId, next)),
          ...locks,
          ...(builtin ? [] : [putItem({ ...keys.appointmentByBookingUid(orgId, next.scheduler_booking_uid), entity: 'APPOINTMENT_UID', appointment_id: next.id })]),
          ...entry.items,
          published.write,
        ],
        [{ orgId, collection: collections.appointments, delta: 1 }],
        entry.guards,
      );
      await dispatchEvents([published.event]);
      return;
    } catch (err) {
      if (err instanceof ContactGone) {
        skipContact = true;
        continue;
      }
      if (!(err instanceof ConditionFailed)) throw err;
      if (!isConflict(err)) {
        const current = await getItem<AppointmentItem>(keys.appointment(orgId, old.id));
        if (current?.status !== 'accepted') throw new ConflictError(`Appointment is ${current?.status ?? 'gone'}; only accepted appointments can change`, { id: old.id });
        throw new UnprocessableError('The new slot is already taken for this agent', { agent_id: old.agent_id, start_time: next.start_time, end_time: next.end_time });
      }
      await pause(attempt, 250, 5);
    }
  }
  throw new ConflictError('Too many concurrent changes; retry');
}

/** Cancels an accepted appointment and frees its slot (Cal.com first when it booked there). */
export async function cancelAppointment(orgId: string, id: string, reason?: string): Promise<Appointment> {
  const current = view(await accepted(orgId, id));
  const provider = await providerFor(orgId, current);
  if (provider) {
    try {
      await provider.cancel(current.scheduler_booking_uid, reason);
    } catch (err) {
      throw providerError(err, 'cancel the booking');
    }
  }
  return writeCancel(orgId, current, reason);
}

async function writeCancel(orgId: string, a: Appointment, reason?: string): Promise<Appointment> {
  const updated_at = new Date().toISOString();
  const set = { status: 'cancelled' as const, updated_at, ...(reason ? { cancellation_reason: reason } : {}) };
  const locks = a.provider === 'builtin' ? bucketsOf(Date.parse(a.start_time), a.duration_minutes).map((b) => lockDelete(orgId, a.agent_id, b, a.id)) : [];
  const cancelled = { ...a, ...set };
  const published = newEvent(orgId, 'appointment.cancelled', cancelled);
  let skipContact = false;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const entry = await contactEntry(orgId, a.contact_id, `Appointment for ${when(a.start_time)} cancelled${reason ? `: ${reason}` : ''}`, updated_at, skipContact);
    try {
      await transact(
        [updateExisting(keys.appointment(orgId, a.id), set, { condition: '#st = :acc', names: { '#st': 'status' }, values: { ':acc': 'accepted' } }), ...locks, ...entry.items, published.write],
        [],
        entry.guards,
      );
      await dispatchEvents([published.event]);
      return cancelled;
    } catch (err) {
      if (err instanceof ContactGone) {
        skipContact = true;
        continue;
      }
      if (!(err instanceof ConditionFailed)) throw err;
      if (!isConflict(err)) throw new ConflictError('Appointment is no longer accepted', { id: a.id });
      await pause(attempt, 250, 5);
    }
  }
  throw new ConflictError('Too many concurrent changes; retry');
}

// ---------------------------------------------------------------------------------------------
// Cal.com webhooks: keep our copy in step with changes made on Cal.com's side

async function byBookingUid(orgId: string, uid: unknown): Promise<Appointment | undefined> {
  if (typeof uid !== 'string' || !uid) return undefined;
  const lookup = await getItem<{ appointment_id: string }>(keys.appointmentByBookingUid(orgId, uid));
  if (!lookup) return undefined;
  const item = await getItem<AppointmentItem>(keys.appointment(orgId, lookup.appointment_id));
  return item ? view(item) : undefined;
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

/**
 * Applies one Cal.com booking event. Every event is idempotent: a cancellation of a booking we
 * already cancelled, a reschedule whose new uid we already know, a creation we made ourselves
 * all change nothing. Bookings made on Cal.com are imported only when their metadata names one of
 * our agents (`metadata[agent_id]`), since an appointment belongs to an agent.
 */
export async function receiveCalcomWebhook(orgId: string, rawBody: string, signature: string | undefined, event: { triggerEvent: string; payload: Record<string, unknown> }) {
  await verifyCalcomSignature(orgId, rawBody, signature);
  return { trigger_event: event.triggerEvent, ...(await applyCalcomEvent(orgId, event)) };
}

export async function applyCalcomEvent(orgId: string, event: { triggerEvent: string; payload: Record<string, unknown> }) {
  const p = event.payload;
  const uid = str(p.uid);
  switch (event.triggerEvent) {
    case 'BOOKING_CANCELLED': {
      const a = await byBookingUid(orgId, uid);
      if (!a || a.status !== 'accepted') return { action: 'ignored' };
      await writeCancel(orgId, a, str(p.cancellationReason) ?? 'Cancelled on Cal.com').catch(ignoreIfMoved);
      return { action: 'cancelled', appointment_id: a.id };
    }
    case 'BOOKING_RESCHEDULED': {
      if (await byBookingUid(orgId, uid)) return { action: 'ignored' };
      const old = await byBookingUid(orgId, p.rescheduleUid);
      const start = str(p.startTime);
      const end = str(p.endTime);
      if (!old || old.status !== 'accepted' || !uid || !start || !end) return { action: 'ignored' };
      const now = new Date().toISOString();
      const next: Appointment = {
        ...old,
        id: uuidv7(),
        scheduler_booking_uid: uid,
        start_time: new Date(start).toISOString(),
        end_time: new Date(end).toISOString(),
        duration_minutes: Math.round((Date.parse(end) - Date.parse(start)) / MINUTE),
        status: 'accepted',
        rescheduled_from: old.id,
        created_at: now,
        updated_at: now,
      };
      delete next.rescheduled_to;
      await writeReschedule(orgId, old, next).catch(ignoreIfMoved);
      return { action: 'rescheduled', appointment_id: next.id };
    }
    case 'BOOKING_CREATED': {
      if (!uid || (await byBookingUid(orgId, uid))) return { action: 'ignored' };
      const metadata = (p.metadata ?? {}) as Record<string, unknown>;
      const agentId = str(metadata.agent_id);
      const start = str(p.startTime);
      const end = str(p.endTime);
      if (!agentId || !start || !end || !(await getItem(keys.agent(orgId, agentId)))) return { action: 'ignored' };
      const contactId = str(metadata.contact_id);
      const contact = contactId ? await findContact(orgId, contactId) : undefined;
      const attendee = (Array.isArray(p.attendees) ? p.attendees[0] : undefined) as Record<string, unknown> | undefined;
      const now = new Date().toISOString();
      const a: Appointment = {
        id: uuidv7(),
        organization_id: orgId,
        agent_id: agentId,
        contact_id: contact ? contactId! : null,
        scheduler_booking_uid: uid,
        provider: 'calcom',
        attendee_name: str(attendee?.name) ?? '',
        attendee_email: (str(attendee?.email) ?? '').toLowerCase(),
        attendee_phone: str(attendee?.phoneNumber) ?? '',
        attendee_timezone: str(attendee?.timeZone) ?? 'UTC',
        start_time: new Date(start).toISOString(),
        end_time: new Date(end).toISOString(),
        duration_minutes: Math.round((Date.parse(end) - Date.parse(start)) / MINUTE),
        meeting_url: str((p.metadata as Record<string, unknown> | undefined)?.videoCallUrl) ?? '',
        status: 'accepted',
        created_at: now,
        updated_at: now,
      };
      await writeBooking(orgId, a);
      return { action: 'created', appointment_id: a.id };
    }
    default:
      return { action: 'ignored' };
  }
}

/** A webhook that lost a race with our own change of the same booking has nothing left to do. */
function ignoreIfMoved(err: unknown) {
  if (err instanceof ConflictError) return;
  throw err;
}
