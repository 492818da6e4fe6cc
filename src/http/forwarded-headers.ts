/** Set on a request one node forwards to another: the receiver never forwards it again. */
export const FORWARDED_BY = 'x-holon-forwarded-by';
/** Set with it: the host and scheme the client asked the forwarding node on (a capability URL minted by the holder names them). */
export const FORWARDED_HOST = 'x-holon-forwarded-host';
export const FORWARDED_PROTO = 'x-holon-forwarded-proto';
