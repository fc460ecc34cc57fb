# Counts the core lines of an examples/<name>/main.go by the rule in
# examples/README.md:  awk -f examples/corelines.awk examples/maml/main.go
# Core lines of a Go example: not blank, not a comment, not the package
# clause or imports, not inside func main, not only closing brackets.
/^package / { next }
/^import \(/ { inimp = 1; next }
inimp && /^\)/ { inimp = 0; next }
inimp { next }
/^import / { next }
/^func main\(\) \{/ { inmain = 1; next }
inmain && /^\}/ { inmain = 0; next }
inmain { next }
{ s = $0; gsub(/^[ \t]+|[ \t]+$/, "", s) }
s == "" { next }
s ~ /^\/\// { next }
s ~ /^[\}\)\]]+[,;]?$/ { next }
{ n++ }
END { print n }
