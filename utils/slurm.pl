#!/usr/bin/env perl
# Runs a command, or an array of JOB=1:N commands, as one SLURM job array, waits for it,
# and fails if any task failed.  Same interface and log format as utils/run.pl:
#
#   utils/slurm.pl [--mem 4G] [--num-threads N] [--gpu N] [--time T] [--max-jobs-run K]
#                  [--config conf/slurm.conf] [JOB=1:N] LOGFILE command args...
#
# Options are mapped to sbatch options through the config (default: conf/slurm.conf next
# to this script's parent directory); --max-jobs-run K becomes the array throttle %K.
# Each task's log gets the command, start time, output, end time and exit code.  A task
# counts as failed when SLURM reports a state other than COMPLETED (FAILED, CANCELLED,
# TIMEOUT, OUT_OF_MEMORY, NODE_FAIL...) or its log shows a non-zero or missing exit code.
# Ctrl-C (SIGINT/SIGTERM) cancels the job array.
use strict;
use warnings;
use Cwd qw(getcwd);
use File::Basename qw(basename dirname);
use FindBin;
use lib "$FindBin::RealBin/lib";
use PunctJobs;
use Time::HiRes qw(sleep);

my $prog = "slurm.pl";
my $parsed = eval { PunctJobs::parse_command_line($prog, @ARGV) };
if ($@) { print STDERR $@; exit 1; }
my %options = %{$parsed->{options}};
my $config_file = $options{config} // "$FindBin::RealBin/../conf/slurm.conf";
delete $options{config};
my $max_jobs_run = delete $options{max_jobs_run};
my $poll_seconds = $ENV{PUNCT_SLURM_POLL} // 0.5;

# ---------------------------------------------------------------- config
sub read_config {
  my ($file) = @_;
  open(my $fh, "<", $file) or die "$prog: cannot read config $file: $!\n";
  my (@command, %exact, %wildcard, %defaults);
  while (my $line = <$fh>) {
    chomp $line;
    $line =~ s/^\s+|\s+$//g;
    next if $line eq "" || $line =~ /^#/;
    if ($line =~ /^command\s+(.+)$/) {
      @command = split /\s+/, $1;
    } elsif ($line =~ /^option\s+(\w+)=\*\s*(.*)$/) {
      $wildcard{$1} = $2;
    } elsif ($line =~ /^option\s+(\w+)=(\S+)\s*(.*)$/) {
      $exact{"$1=$2"} = $3;
    } elsif ($line =~ /^default\s+(\w+)=(\S+)$/) {
      $defaults{$1} = $2;
    } else {
      die "$prog: $file line $.: cannot parse '$line'\n";
    }
  }
  close $fh;
  die "$prog: $file has no 'command' line\n" unless @command;
  return { command => \@command, exact => \%exact, wildcard => \%wildcard, defaults => \%defaults };
}

sub sbatch_options {
  my ($config, $opts) = @_;
  my %values = (%{$config->{defaults}}, %$opts);
  my @result;
  for my $name (sort keys %values) {
    my $value = $values{$name};
    my $mapped;
    if (exists $config->{exact}{"$name=$value"}) {
      $mapped = $config->{exact}{"$name=$value"};
    } elsif (exists $config->{wildcard}{$name}) {
      ($mapped = $config->{wildcard}{$name}) =~ s/\$0/$value/g;
    } else {
      die "$prog: option --$name=$value has no mapping in $config_file\n";
    }
    push @result, split(/\s+/, $mapped) if length $mapped;
  }
  # A later --partition overrides an earlier one (e.g. GPU jobs).
  return @result;
}

# ---------------------------------------------------------------- job script
my $config = eval { read_config($config_file) };
if ($@) { print STDERR $@; exit 1; }
my @sbatch = (@{$config->{command}}, eval { sbatch_options($config, \%options) });
if ($@) { print STDERR $@; exit 1; }

my ($first, $last, $jobvar) = ($parsed->{first}, $parsed->{last}, $parsed->{jobvar});
my $total = $last - $first + 1;
my $logfile = $parsed->{logfile};
my $log_dir = dirname($logfile);
my $queue_dir = "$log_dir/q";
(my $base = basename($logfile)) =~ s/\.log$//;
$base = PunctJobs::substitute_job($base, $jobvar, "") if defined $jobvar;
$base =~ s/\.\././g; $base =~ s/^\.|\.$//g;
$base = "job" if $base eq "";
system("mkdir", "-p", $queue_dir) == 0 or die "$prog: cannot create $queue_dir\n";

my $command_text = join(" ", map { PunctJobs::shell_quote($_) } @{$parsed->{args}});
my $command_shell = join(" ", map { PunctJobs::shell_quote_with_var($_, $jobvar, "task_id") } @{$parsed->{args}});
my $log_shell = PunctJobs::shell_quote_with_var($logfile, $jobvar, "task_id");
my $header_shell = PunctJobs::shell_quote_with_var($command_text, $jobvar, "task_id");
my $script = "$queue_dir/$base.sh";
my $cwd = getcwd();

open(my $sh, ">", "$script.tmp") or die "$prog: cannot write $script: $!\n";
print $sh <<"SCRIPT";
#!/usr/bin/env bash
# Written by utils/slurm.pl; one SLURM array task runs one job.
cd @{[PunctJobs::shell_quote($cwd)]} || exit 1
task_id=\${SLURM_ARRAY_TASK_ID:-$first}
log=$log_shell
mkdir -p "\$(dirname "\$log")"
{
  printf '# %s\\n' $header_shell
  echo "# Started at \$(date '+%a %b %e %H:%M:%S %Z %Y')"
  echo "#"
} > "\$log"
start=\$(date +%s)
set -o pipefail
( $command_shell ) >>"\$log" 2>&1
ret=\$?
echo "# Ended (code \$ret) at \$(date '+%a %b %e %H:%M:%S %Z %Y'), elapsed time \$(( \$(date +%s) - start )) seconds" >> "\$log"
exit \$ret
SCRIPT
close $sh;
rename("$script.tmp", $script) or die "$prog: cannot rename $script.tmp: $!\n";
chmod 0755, $script;

# ---------------------------------------------------------------- submit
my $array = "$first-$last" . (defined $max_jobs_run ? "%$max_jobs_run" : "");
my @submit = (@sbatch, "--parsable", "--job-name=$base", "--array=$array",
  "--output=$queue_dir/$base.%a.out", $script);
my $submit_text = join(" ", map { PunctJobs::shell_quote($_) } @submit);
my $answer = `$submit_text 2>&1`;
my $submit_code = $? >> 8;
chomp $answer;
if ($submit_code != 0 || $answer !~ /^(\d+)/m) {
  print STDERR "$prog: sbatch refused the job (exit $submit_code): $answer\n$prog: command was: $submit_text\n";
  exit 1;
}
my $job_id = $1;
print STDERR "$prog: submitted job array $job_id ($total task(s), array $array) for $logfile\n";

my $cancelled = 0;
sub cancel_and_exit {
  my ($signal) = @_;
  system("scancel", $job_id);
  print STDERR "$prog: interrupted by SIG$signal, cancelled job $job_id\n";
  exit 130;
}
$SIG{INT} = sub { cancel_and_exit("INT") };
$SIG{TERM} = sub { cancel_and_exit("TERM") };

# ---------------------------------------------------------------- wait
while (1) {
  my $queued = `squeue -h -j $job_id -o %i 2>/dev/null`;
  last if $? != 0 || $queued !~ /\S/;
  sleep($poll_seconds);
}

# ---------------------------------------------------------------- verdict
my %state;   # task id => JobState
for my $record (split /\n/, `scontrol show job -o $job_id 2>/dev/null`) {
  my ($task) = $record =~ /\bArrayTaskId=(\d+)\b/;
  my ($job_state) = $record =~ /\bJobState=(\S+)/;
  $state{$task} = $job_state if defined $task && defined $job_state;
}

my @failed;
for my $task ($first .. $last) {
  my $task_log = PunctJobs::substitute_job($logfile, $jobvar, $task);
  my $code = PunctJobs::exit_code_in_log($task_log);
  my $job_state = $state{$task};
  my @why;
  push @why, "state $job_state" if defined $job_state && $job_state ne "COMPLETED";
  push @why, defined $code ? "exit code $code" : "no exit code in log" if !defined $code || $code != 0;
  push @failed, [$task_log, join(", ", @why)] if @why && !(defined $job_state && $job_state eq "COMPLETED" && defined $code && $code == 0);
}
if (@failed) {
  print STDERR PunctJobs::failure_message($prog, scalar(@failed), $total, $failed[0][0],
    "job $job_id; $failed[0][1]; SLURM output in $queue_dir");
  exit 1;
}
exit 0;
