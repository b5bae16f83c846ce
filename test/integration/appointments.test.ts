import { v7 as uuidv7 } from 'uuid';
import { createAgent } from '../../shared/domain/agents/service';
import { BookAppointmentBody } from '../../shared/domain/appointments/schemas';
import { bookAppointment, cancelAppointment, listAppointments, rescheduleAppointment } from '../../shared/domain/appointments/service';
import { createContact, getContactStats, listActivities } from '../../shared/domain/contacts/service';
import { AppError } from '../../shared/errors';

const body = (over: object) => BookAppointmentBody.parse({ attendee_name: 'Ada', duration_minutes: 30, ...over });

describe('built-in calendar', () => {
  it('lets exactly one of six simultaneous bookings land when every two overlap', async () => {
    // Prepare
    const org = uuidv7();
    const agent = await createAgent(org, { name: 'A' } as never);
    // Act
    const results = await Promise.allSettled(
      ['10:00', '10:00', '10:10', '10:15', '09:50', '10:05'].map((t) => bookAppointment(org, body({ agent_id: agent.id, start_time: `2032-01-05T${t}:00Z` }))),
    );
    // Assess
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused.map((r) => (r.reason as AppError).statusCode)).toEqual([422, 422, 422, 422, 422]);
    expect((await listAppointments(org, { limit: 20, offset: 0, agent_id: agent.id, status: 'accepted' })).meta.total).toBe(1);
  });

  it('writes the contact\'s timeline and stats with each booking, move and cancellation', async () => {
    const org = uuidv7();
    const agent = await createAgent(org, { name: 'A' } as never);
    const contact = await createContact(org, { first_name: 'Ada' });
    const a = await bookAppointment(org, body({ agent_id: agent.id, contact_id: contact.id, start_time: '2032-01-05T10:00:00Z' }));
    const b = await rescheduleAppointment(org, a.id, { start_time: '2032-01-05T10:15:00.000Z' });
    await cancelAppointment(org, b.id, 'No longer needed');
    const timeline = await listActivities(org, contact.id);
    expect(timeline.map((x) => x.description)).toEqual([
      'Appointment booked for 2032-01-05 10:00Z (30 min)',
      'Appointment rescheduled from 2032-01-05 10:00Z to 2032-01-05 10:15Z (30 min)',
      'Appointment for 2032-01-05 10:15Z cancelled: No longer needed',
    ]);
    expect((await getContactStats(org, contact.id)).appointments).toBe(1);
    // Every lock is gone: the whole hour books again.
    await expect(bookAppointment(org, body({ agent_id: agent.id, start_time: '2032-01-05T10:00:00Z', duration_minutes: 60 }))).resolves.toMatchObject({ status: 'accepted' });
  });
});
