import { formatIssue, validateText } from "../shared/validation/validate_documents.ts";
for (const f of Deno.args) {
  const r = validateText(await Deno.readTextFile(f), f);
  for (const i of r.issues) console.log(formatIssue(i));
  console.log(f, r.resources.length, "ok", r.skipped.length, "skipped");
}
