/**
 * `meshctl options` (meshctl seed, "options"): the options every command accepts.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";

/** Builds `options`; `root` is the program whose options are listed. */
export function optionsCommand(
  root: () => CommandUnknownOpts,
  write: (text: string) => void,
): CommandUnknownOpts {
  return new Command("options").description("Print the options every command accepts")
    .action(() => {
      const options = root().options;
      const width = Math.max(...options.map((o) => o.flags.length));
      write(
        "The following options can be passed to any command:\n\n" +
          options.map((o) =>
            `  ${o.flags.padEnd(width)}  ${o.description}${
              o.defaultValue !== undefined && o.defaultValue !== "" && !Array.isArray(o.defaultValue)
                ? ` (default "${o.defaultValue}")`
                : ""
            }\n`
          ).join(""),
      );
    });
}
