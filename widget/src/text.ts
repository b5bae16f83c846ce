/** The widget's own words, in the widget's `language` (English when it is not one of these). */
const en = {
  open: 'Open chat',
  close: 'Close chat',
  send: 'Send message',
  message: 'Message',
  log: 'Conversation',
  typing: 'is typing',
  sources: 'Sources:',
  rate: 'You are sending messages too quickly. You can try again in {s} seconds.',
  down: 'The assistant is unavailable right now. Please try again in {s} seconds.',
  offline: 'Connection problem. Check your connection and try again.',
  failed: 'Something went wrong. Please try again.',
  ended: 'This chat has ended.',
  unavailable: 'This assistant is not available right now.',
  daily: 'This assistant has answered all the messages it can today. Please come back tomorrow.',
  lost: 'This chat is no longer available.',
  retry: 'Try again',
  again: 'Start a new chat',
  you: 'You',
};
type Text = typeof en;

const others: Record<string, Partial<Text>> = {
  fr: {
    open: 'Ouvrir le chat', close: 'Fermer le chat', send: 'Envoyer le message', message: 'Message', log: 'Conversation',
    typing: 'écrit', sources: 'Sources :', rate: 'Vous envoyez des messages trop vite. Réessayez dans {s} secondes.',
    down: 'L\'assistant est indisponible pour le moment. Réessayez dans {s} secondes.', offline: 'Problème de connexion. Vérifiez votre connexion et réessayez.',
    failed: 'Une erreur s\'est produite. Réessayez.', ended: 'Cette conversation est terminée.',
    unavailable: 'Cet assistant n\'est pas disponible pour le moment.', daily: 'Cet assistant a répondu à tous les messages possibles aujourd\'hui. Revenez demain.', lost: 'Cette conversation n\'est plus disponible.',
    retry: 'Réessayer', again: 'Nouvelle conversation', you: 'Vous',
  },
  es: {
    open: 'Abrir el chat', close: 'Cerrar el chat', send: 'Enviar mensaje', message: 'Mensaje', log: 'Conversación',
    typing: 'está escribiendo', sources: 'Fuentes:', rate: 'Está enviando mensajes demasiado rápido. Inténtelo de nuevo en {s} segundos.',
    down: 'El asistente no está disponible ahora. Inténtelo de nuevo en {s} segundos.', offline: 'Problema de conexión. Compruebe su conexión e inténtelo de nuevo.',
    failed: 'Algo salió mal. Inténtelo de nuevo.', ended: 'Este chat ha terminado.',
    unavailable: 'Este asistente no está disponible en este momento.', daily: 'Este asistente ya respondió todos los mensajes que puede hoy. Vuelva mañana.', lost: 'Este chat ya no está disponible.',
    retry: 'Reintentar', again: 'Nuevo chat', you: 'Usted',
  },
  de: {
    open: 'Chat öffnen', close: 'Chat schließen', send: 'Nachricht senden', message: 'Nachricht', log: 'Unterhaltung',
    typing: 'schreibt', sources: 'Quellen:', rate: 'Sie senden zu schnell. Versuchen Sie es in {s} Sekunden erneut.',
    down: 'Der Assistent ist gerade nicht erreichbar. Versuchen Sie es in {s} Sekunden erneut.', offline: 'Verbindungsproblem. Prüfen Sie Ihre Verbindung und versuchen Sie es erneut.',
    failed: 'Etwas ist schiefgelaufen. Bitte erneut versuchen.', ended: 'Dieser Chat ist beendet.',
    unavailable: 'Dieser Assistent ist gerade nicht verfügbar.', daily: 'Dieser Assistent hat heute alle Nachrichten beantwortet, die er kann. Bitte kommen Sie morgen wieder.', lost: 'Dieser Chat ist nicht mehr verfügbar.',
    retry: 'Erneut versuchen', again: 'Neuen Chat starten', you: 'Sie',
  },
};

export function texts(language: string): Text {
  return { ...en, ...others[(language || 'en').toLowerCase().split('-')[0]!] };
}
