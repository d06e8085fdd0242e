# Bash completion for wavec, installed as share/bash-completion/completions/wavec (bash-completion
# loads it on demand; or `source` it). Flags come from `wavec --help` and targets from
# `wavec --print-targets` of the wavec being completed, so they are never out of date.
_wavec() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} wavec=${COMP_WORDS[0]}
  # With '=' in COMP_WORDBREAKS (bash's default), `--target=sm` arrives as `--target` `=` `sm`.
  if [ "$cur" = "=" ]; then
    cur=""
  elif [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 2 ]; then
    prev=${COMP_WORDS[COMP_CWORD-2]}
  fi
  case $prev in
    --target)
      COMPREPLY=($(compgen -W "$("$wavec" --print-targets 2>/dev/null | grep -oE '^[a-z][a-z0-9_]+')" -- "$cur"))
      return ;;
    --emit)
      COMPREPLY=($(compgen -W "ast ir distribution metadata mlir llvm asm hsaco ptx cubin emu" -- "$cur"))
      return ;;
    --diagnostics-format)
      COMPREPLY=($(compgen -W "text json sarif" -- "$cur")); return ;;
    --color)
      COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
    --print-ir-after)
      COMPREPLY=($(compgen -W "parse sema distribute mlir llvm asm" -- "$cur")); return ;;
    -o|--header|--stub|-MF|-MT)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --dump-dir|--cache-dir)
      COMPREPLY=($(compgen -d -- "$cur")); return ;;
  esac
  case $cur in
    --target=*)
      COMPREPLY=($(compgen -P --target= -W "$("$wavec" --print-targets 2>/dev/null | grep -oE '^[a-z][a-z0-9_]+')" -- "${cur#--target=}"))
      return ;;
    --emit=*)
      COMPREPLY=($(compgen -P --emit= -W "ast ir distribution metadata mlir llvm asm hsaco ptx cubin emu" -- "${cur#--emit=}"))
      return ;;
    -*)
      COMPREPLY=($(compgen -W "$("$wavec" --help 2>/dev/null | grep -oE '^  -{1,2}[a-zA-Z][-a-zA-Z0-9]*' | tr -d ' ')" -- "$cur"))
      return ;;
  esac
  COMPREPLY=($(compgen -f -X '!*.wave' -- "$cur") $(compgen -d -- "$cur"))
}
complete -o filenames -F _wavec wavec
