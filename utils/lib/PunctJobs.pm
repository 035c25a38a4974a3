# Shared pieces of utils/run.pl and utils/slurm.pl: option parsing, the JOB range,
# safe shell quoting, and the log-file header/footer both runners write.
#
# Command line (both runners):
#   RUNNER [--mem 4G] [--num-threads N] [--gpu N] [--time T] [--max-jobs-run K]
#          [--config FILE] [-x VALUE | -xVALUE | -V ...] [JOB=1:N] LOGFILE command args...
# Options may also follow the JOB range.  Every occurrence of the job variable (JOB, or
# whatever name precedes '=') in LOGFILE and in the command's arguments is replaced by the
# job index; a range of more than one job needs the variable in LOGFILE.
# Single-dash options are scheduler options (utils/slurm.pl hands them to sbatch, run.pl
# ignores them): "-x" takes the next word as its value, except the value-less flags
# -V -H -k -O -Q -s -v -W; a longer word ("-pgpu", "-c4") carries its own value.
package PunctJobs;

use strict;
use warnings;
use File::Basename qw(dirname);
use POSIX qw(strftime);

our @OPTION_NAMES = qw(mem num_threads gpu time max_jobs_run config);

# Single-dash options that take no value (-V is GridEngine's "export the environment").
our %VALUELESS_SHORT = map { $_ => 1 } qw(-V -H -k -O -Q -s -v -W);

# Parses @ARGV-like arguments. Returns a hash:
#   options => {mem=>..., ...}, passthrough => [single-dash words], jobvar, first, last,
#   logfile, args => [...]
sub parse_command_line {
  my ($prog, @argv) = @_;
  my (%options, @passthrough);
  my ($jobvar, $first, $last) = (undef, 1, 1);
  for my $round (1, 2) {           # options, [JOB range, options]
    while (@argv && $argv[0] =~ /^-/ && $argv[0] ne "-") {
      my $flag = shift @argv;
      if ($flag =~ /^-[A-Za-z]$/) {
        push @passthrough, $flag;
        next if $VALUELESS_SHORT{$flag};
        die "$prog: option $flag needs a value\n" unless @argv;
        push @passthrough, shift @argv;
        next;
      }
      if ($flag =~ /^-[A-Za-z]./) {
        push @passthrough, $flag;
        next;
      }
      my ($name, $value);
      if ($flag =~ /^--([A-Za-z][\w-]*)=(.*)$/) {
        ($name, $value) = ($1, $2);
      } elsif ($flag =~ /^--([A-Za-z][\w-]*)$/) {
        $name = $1;
        die "$prog: option $flag needs a value\n" unless @argv;
        $value = shift @argv;
      } else {
        die "$prog: unknown option $flag\n";
      }
      $name =~ s/-/_/g;
      die "$prog: unknown option --$name (known: " . join(", ", map { "--$_" } @OPTION_NAMES) . ")\n"
        unless grep { $_ eq $name } @OPTION_NAMES;
      $options{$name} = $value;
    }
    last if $round == 2 || !@argv || $argv[0] !~ /^([A-Za-z_]\w*)=(\d+)(?::(\d+))?$/;
    ($jobvar, $first, $last) = ($1, $2, defined $3 ? $3 : $2);
    shift @argv;
    die "$prog: bad job range $jobvar=$first:$last (first must be <= last)\n" if $first > $last;
  }
  if (defined $options{max_jobs_run}) {
    die "$prog: --max-jobs-run takes a positive integer, not '$options{max_jobs_run}'\n"
      unless $options{max_jobs_run} =~ /^[1-9]\d*$/;
  }
  for my $int_option (qw(gpu num_threads)) {
    die "$prog: --" . ($int_option =~ s/_/-/gr) . " takes a non-negative integer, not '$options{$int_option}'\n"
      if defined $options{$int_option} && $options{$int_option} !~ /^\d+$/;
  }
  die usage($prog) if @argv < 2;
  my $logfile = shift @argv;
  if (defined $jobvar && $last > $first && $logfile !~ job_pattern($jobvar)) {
    die "$prog: $jobvar=$first:$last runs " . ($last - $first + 1) . " jobs but the log file $logfile"
      . " does not contain $jobvar, so they would all write the same log\n";
  }
  return {
    options => \%options, passthrough => \@passthrough, jobvar => $jobvar, first => $first,
    last => $last, logfile => $logfile, args => [@argv],
  };
}

sub usage {
  my ($prog) = @_;
  return "Usage: $prog [options] [JOB=1:N] <log-file> <command> [<args>...]\n"
    . "e.g.: $prog JOB=1:4 exp/x/log/dump.JOB.log python -m punct.bin.dump --job JOB --nj 4\n"
    . "Options: --mem 4G --num-threads N --gpu N --time T --max-jobs-run K --config FILE,\n"
    . "and single-dash scheduler options for slurm.pl (e.g. -p gpu), which run.pl ignores.\n"
    . "Every JOB in the log name and arguments becomes the job index. Arguments are quoted for\n"
    . "the shell, except the bare operators | || && ; > >> < 2> 2>&1, so pipelines still work.\n";
}

# Words that stay unquoted so that a command can be a pipeline or redirect.
my %SHELL_OPERATORS = map { $_ => 1 } ('|', '||', '&&', ';', '>', '>>', '<', '2>', '2>>', '2>&1', '&>');

sub shell_quote {
  my ($word) = @_;
  return $word if $SHELL_OPERATORS{$word};
  return $word if $word =~ m{^[A-Za-z0-9_./:=,+@%^-]+$};
  (my $escaped = $word) =~ s/'/'\\''/g;
  return "'$escaped'";
}

sub job_pattern {
  my ($jobvar) = @_;
  return qr/(?<![A-Za-z])\Q$jobvar\E(?![A-Za-z])/;
}

# Replaces the job variable by the job index in one word.
sub substitute_job {
  my ($word, $jobvar, $jobid) = @_;
  return $word unless defined $jobvar;
  my $pattern = job_pattern($jobvar);
  $word =~ s/$pattern/$jobid/g;
  return $word;
}

# The shell text of one word in which the job variable becomes "${shell_var}".
sub shell_quote_with_var {
  my ($word, $jobvar, $shell_var) = @_;
  return shell_quote($word) unless defined $jobvar;
  my $pattern = job_pattern($jobvar);
  my @pieces = split /$pattern/, $word, -1;
  return shell_quote($word) if @pieces == 1;
  return join("\"\${$shell_var}\"", map { length($_) ? shell_quote($_) : "''" } @pieces);
}

# The command line for one job (its arguments substituted and quoted).
sub command_for_job {
  my ($parsed, $jobid) = @_;
  return join(" ", map { shell_quote(substitute_job($_, $parsed->{jobvar}, $jobid)) } @{$parsed->{args}});
}

sub now_string { return strftime("%a %b %e %H:%M:%S %Z %Y", localtime); }

sub log_header {
  my ($command) = @_;
  return "# $command\n# Started at " . now_string() . "\n#\n";
}

sub log_footer {
  my ($code, $elapsed) = @_;
  return "# Ended (code $code) at " . now_string() . ", elapsed time $elapsed seconds\n";
}

# Exit code recorded in a finished log, or undef when the job never finished.
sub exit_code_in_log {
  my ($logfile) = @_;
  open(my $fh, "<", $logfile) or return undef;
  my $code;
  while (my $line = <$fh>) {
    $code = $1 if $line =~ /^# Ended \(code (\d+)\)/;
  }
  close $fh;
  return $code;
}

sub make_parent_dir {
  my ($path) = @_;
  my $dir = dirname($path);
  return if -d $dir;
  system("mkdir", "-p", $dir) == 0 or die "cannot create directory $dir\n";
}

sub failure_message {
  my ($prog, $failed, $total, $first_log, $detail) = @_;
  my $msg = "$prog: $failed / $total failed, log is in $first_log";
  $msg .= " ($detail)" if defined $detail && length $detail;
  return "$msg\n";
}

1;
