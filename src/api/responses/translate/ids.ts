/** Ids in OpenAI's shapes: `resp_…`, `msg_…`, `fc_…`, `rs_…` (random hex, like the API's). */
const hex = (n: number) => {
  const b = new Uint8Array(n);
  crypto.getRandomValues(b);
  return Buffer.from(b).toString("hex");
};

export const responseId = () => `resp_${hex(24)}`;
export const itemId = (prefix: "msg" | "fc" | "rs") => `${prefix}_${hex(24)}`;
