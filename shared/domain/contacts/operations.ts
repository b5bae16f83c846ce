import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import {
  Activity,
  Contact,
  ContactCall,
  ContactListQuery,
  ContactSearchQuery,
  ContactStats,
  CreateContactBody,
  HistoryListQuery,
  Note,
  NoteBody,
  UpdateContactBody,
} from './schemas';
import * as z from 'zod/mini';

const tag = 'Contacts';

export const createContact = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/contacts', operationId: 'createContact', tag, auth: true,
  summary: 'Create a contact (every field optional; phone normalized to E.164, email lowercased)',
  entry: 'functions/contacts/create.ts', body: CreateContactBody,
  successMessage: 'Contact created successfully', access: { table: 'RW' },
});

export const listContacts = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/contacts', operationId: 'listContacts', tag, auth: true,
  summary: 'List the organization\'s contacts',
  entry: 'functions/contacts/list.ts', query: ContactListQuery, list: true, access: { table: 'R' },
});

export const searchContacts = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/contacts/search', operationId: 'searchContacts', tag, auth: true,
  summary: 'Search contacts: `q` is an exact email (has "@"), an exact phone (valid E.164), or else a first/last/full name prefix',
  entry: 'functions/contacts/search.ts', query: ContactSearchQuery, list: true, access: { table: 'R' },
});

export const getContact = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/contacts/{id}', operationId: 'getContact', tag, auth: true,
  summary: 'Get one contact', entry: 'functions/contacts/get.ts', params: IdParams, access: { table: 'R' },
});

export const updateContact = /* @__PURE__ */ defineOperation({
  method: 'PATCH', path: '/api/v1/contacts/{id}', operationId: 'updateContact', tag, auth: true,
  summary: 'Update a contact; only supplied fields change ("" clears email, phone or timezone)',
  entry: 'functions/contacts/update.ts', params: IdParams, body: UpdateContactBody,
  successMessage: 'Contact updated successfully', access: { table: 'RW' },
});

export const deleteContact = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/contacts/{id}', operationId: 'deleteContact', tag, auth: true,
  summary: 'Delete a contact with its notes, timeline and call history',
  entry: 'functions/contacts/delete.ts', params: IdParams,
  successMessage: 'Contact deleted successfully', access: { table: 'RW' },
});

export const addContactNote = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/contacts/{id}/notes', operationId: 'addContactNote', tag, auth: true,
  summary: 'Add a note to a contact (also a timeline entry)',
  entry: 'functions/contacts/add-note.ts', params: IdParams, body: NoteBody,
  successMessage: 'Note added successfully', access: { table: 'RW' },
});

export const listContactNotes = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/contacts/{id}/notes', operationId: 'listContactNotes', tag, auth: true,
  summary: 'List a contact\'s notes, oldest first',
  entry: 'functions/contacts/list-notes.ts', params: IdParams, query: HistoryListQuery, list: true, access: { table: 'R' },
});

export const listContactActivities = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/contacts/{id}/activities', operationId: 'listContactActivities', tag, auth: true,
  summary: 'A contact\'s activity timeline, oldest first, no `meta` (the most recent 1000 entries)',
  entry: 'functions/contacts/activities.ts', params: IdParams, access: { table: 'R' },
});

export const listContactCalls = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/contacts/{id}/calls', operationId: 'listContactCalls', tag, auth: true,
  summary: 'A contact\'s call history, newest first',
  entry: 'functions/contacts/calls.ts', params: IdParams, query: HistoryListQuery, list: true, access: { table: 'R' },
});

export const getContactStats = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/contacts/{id}/stats', operationId: 'getContactStats', tag, auth: true,
  summary: 'A contact\'s counters: calls, answered calls, call seconds, last call, appointments, notes',
  entry: 'functions/contacts/stats.ts', params: IdParams, access: { table: 'R' },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  createContact.response = Contact;
  listContacts.response = Contact;
  searchContacts.response = Contact;
  getContact.response = Contact;
  updateContact.response = Contact;
  addContactNote.response = Note;
  listContactNotes.response = Note;
  listContactActivities.response = z.array(Activity);
  listContactCalls.response = ContactCall;
  getContactStats.response = ContactStats;
}
