# Shared pieces of utils/run.pl and utils/slurm.pl: option parsing, the JOB range,
# safe shell quoting, and the log-file header/footer both runners write.
#
# Command line (both runners):
#   RUNNER [--mem 4G] [--num-threads N] [--gpu N] [--time T] [--max-jobs-run K]
#          [--config FILE] [-x VALUE | -xVALUE | -V ...] [JOB=1:N] LOGFILE command args...
# Options may also follow the JOB range.  Every occurrence of the job variable (JOB, or
# whatever name precedes '=') in LOGFILE and in the command's arguments is replaced by the
# job index; a range of more than one job needs the variable in LOGFILE.
# GridEngine options that Kaldi recipes give queue.pl are understood first:
#   -tc N       at most N tasks at once: --max-jobs-run N
#   -pe smp N   N CPU slots: --num-threads N (another parallel environment is refused)
#   -sync y     accepted: both runners wait for their jobs anyway (-sync n is refused)
#   -cwd, -j y  accepted: jobs run in the current directory, output and errors go to the one log
#   -l RES      GridEngine resources (-l arch=*64): returned in {resources}; run.pl ignores them,
#               slurm.pl refuses them (sbatch has no -l)
# Other single-dash options are scheduler options (utils/slurm.pl hands them to sbatch, run.pl
# ignores them): "-x" takes the next word as its value, except the value-less flags
# -V -H -k -O -Q -s -v -W; a longer word ("-pgpu", "-c4") carries its own value.  A log file
# name without '.' or '/' right after a single-dash option that took no separate value is
# refused: it is more likely that option's value (e.g. "-hold_jid 12") than a log file.
package PunctJobs;

use strict;
use warnings;
use File::Basename qw(dirname);
use POSIX qw(strftime);
use Sys::Hostname qw(hostname);

our @OPTION_NAMES = qw(mem num_threads gpu time max_jobs_run config);

# Single-dash options that take no value (-V is GridEngine's "export the environment").
our %VALUELESS_SHORT = map { $_ => 1 } qw(-V -H -k -O -Q -s -v -W);

# GridEngine (queue.pl) options with a meaning here: the number of values each takes.
our %GRIDENGINE_OPTIONS = ("-tc" => 1, "-pe" => 2, "-sync" => 1, "-cwd" => 0, "-j" => 1, "-l" => 1);

# Reads one GridEngine option (its values already taken) into %$options or @$resources.
sub gridengine_option {
  my ($prog, $flag, $values, $options, $resources) = @_;
  my $given = join(" ", $flag, @$values);
  if ($flag eq "-tc") {
    die "$prog: $given: -tc takes a positive integer (at most that many tasks at once, as --max-jobs-run)\n"
      unless $values->[0] =~ /^[1-9]\d*$/;
    $options->{max_jobs_run} = $values->[0];
  } elsif ($flag eq "-pe") {
    die "$prog: $given: only the parallel environment smp is understood (-pe smp N: N CPUs, as"
      . " --num-threads N); give --num-threads N\n" unless $values->[0] eq "smp";
    die "$prog: $given: -pe smp takes a positive integer of CPU slots (as --num-threads)\n"
      unless $values->[1] =~ /^[1-9]\d*$/;
    $options->{num_threads} = $values->[1];
  } elsif ($flag eq "-sync") {
    die "$prog: $given: the runners always wait for their jobs; only -sync y is accepted\n"
      unless $values->[0] eq "y";
  } elsif ($flag eq "-j") {
    die "$prog: $given: a job's output and errors always go to its one log; only -j y is accepted\n"
      unless $values->[0] eq "y";
  } elsif ($flag eq "-l") {
    push @$resources, $given;
  }
}

# Parses @ARGV-like arguments. Returns a hash:
#   options => {mem=>..., ...}, passthrough => [single-dash words], resources => [GridEngine
#   "-l RES" requests], jobvar, first, last, logfile, args => [...]
sub parse_command_line {
  my ($prog, @argv) = @_;
  my (%options, @passthrough, @resources);
  my ($jobvar, $first, $last) = (undef, 1, 1);
  my $bare_flag;                   # the last option word when it took no separate value
  for my $round (1, 2) {           # options, [JOB range, options]
    while (@argv && $argv[0] =~ /^-/ && $argv[0] ne "-") {
      my $flag = shift @argv;
      undef $bare_flag;
      if (exists $GRIDENGINE_OPTIONS{$flag}) {
        my $count = $GRIDENGINE_OPTIONS{$flag};
        die "$prog: option $flag needs " . ($count == 1 ? "a value" : "$count values") . "\n" if @argv < $count;
        my @values = splice(@argv, 0, $count);
        gridengine_option($prog, $flag, \@values, \%options, \@resources);
        $bare_flag = $flag if $count == 0;
        next;
      }
      if ($flag =~ /^-[A-Za-z]$/) {
        push @passthrough, $flag;
        if ($VALUELESS_SHORT{$flag}) { $bare_flag = $flag; next; }
        die "$prog: option $flag needs a value\n" unless @argv;
        push @passthrough, shift @argv;
        next;
      }
      if ($flag =~ /^-[A-Za-z]./) {
        push @passthrough, $flag;
        $bare_flag = $flag;
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
    undef $bare_flag;
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
  if (defined $bare_flag && $argv[0] !~ m{[./]}) {
    die "$prog: '$argv[0]' right after $bare_flag would be the log file; if it is the value of $bare_flag, this"
      . " runner does not know $bare_flag as an option with a separate value (write it as one word, e.g."
      . " -pgpu, or leave it out); a log file name needs a '.' or '/'\n";
  }
  my $logfile = shift @argv;
  if (defined $jobvar && $last > $first && $logfile !~ job_pattern($jobvar)) {
    die "$prog: $jobvar=$first:$last runs " . ($last - $first + 1) . " jobs but the log file $logfile"
      . " does not contain $jobvar, so they would all write the same log\n";
  }
  return {
    options => \%options, passthrough => \@passthrough, resources => \@resources, jobvar => $jobvar,
    first => $first, last => $last, logfile => $logfile, args => [@argv],
  };
}

sub usage {
  my ($prog) = @_;
  return "Usage: $prog [options] [JOB=1:N] <log-file> <command> [<args>...]\n"
    . "e.g.: $prog JOB=1:4 exp/x/log/dump.JOB.log python -m punct.bin.dump --job JOB --nj 4\n"
    . "Options: --mem 4G --num-threads N --gpu N --time T --max-jobs-run K --config FILE,\n"
    . "single-dash scheduler options for slurm.pl (e.g. -p gpu), which run.pl ignores, and queue.pl's\n"
    . "-tc N (--max-jobs-run N), -pe smp N (--num-threads N), -sync y, -cwd, -j y, -l RES (run.pl only).\n"
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

# The lines before a job's output: its command, start time and host (Kaldi's "# Running on").
sub log_header {
  my ($command) = @_;
  return "# $command\n# Started at " . now_string() . "\n# Running on " . hostname() . "\n#\n";
}

# The lines after a job's output: Kaldi's "# Accounting: time=S threads=N" (the seconds it ran and
# the CPUs it asked for with --num-threads), then its exit code, always the log's last line.
sub log_footer {
  my ($code, $elapsed, $threads) = @_;
  return "# Accounting: time=$elapsed threads=" . ($threads // 1) . "\n"
    . "# Ended (code $code) at " . now_string() . ", elapsed time $elapsed seconds\n";
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
